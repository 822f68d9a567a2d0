package report

import (
	"math"
	"slices"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// figureValue reads a published metric from a run.
func figureValue(r *results.Run, metric string) float64 {
	m := r.Measured
	switch metric {
	case "publishRate":
		return m.PublishRate
	case "publishMBps":
		return m.PublishMBps
	case "consumeRate":
		return m.ConsumeRate
	case "publishP99":
		return m.PublishLatency.P99
	case "e2eP99":
		return m.EndToEndLatency.P99
	case "costPerBillion":
		return costPerBillion(r)
	}
	return math.NaN()
}

// matches reports whether a study run is one a figure describes.
func matches(r *results.Run, match map[string]string) bool {
	if r.Study == nil {
		return false
	}
	for k, v := range match {
		switch k {
		case "setup":
			if r.Study.Setup != v {
				return false
			}
		case "workload":
			if r.Study.Workload != v {
				return false
			}
		default:
			if !slices.Contains(r.Study.Params, results.Param{Name: k, Value: v}) {
				return false
			}
		}
	}
	return true
}

// measuredFigure is the median of a metric over the runs a figure
// describes, NaN if none.
func (in *Input) measuredFigure(f workload.PublishedFigure) float64 {
	var vals []float64
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			if matches(r, f.Match) && !r.Partial {
				vals = append(vals, figureValue(r, f.Metric))
			}
		}
	}
	if len(vals) == 0 {
		return math.NaN()
	}
	med, _, _ := spread(vals)
	return med
}

// PublishedTable puts each published figure beside the measured one and,
// for figures relative to another, the published ratio beside the
// measured ratio: the shape, which a single machine can reproduce where
// it cannot reproduce a cloud cluster's absolute figures. Nil when no
// study read has published figures.
func (in *Input) PublishedTable() *Table {
	t := &Table{Title: "Published beside measured: values, and shapes (ratios between setups)",
		Headers: []string{"Source", "Figure", "Metric", "Published", "Measured (median)", "Measured / published",
			"Relative to", "Published ratio", "Measured ratio", "Shape kept (measured ratio / published ratio)"},
		CSVHeaders: []string{"source", "figure", "metric", "published", "measured", "measuredOverPublished",
			"relativeTo", "publishedRatio", "measuredRatio", "shapeRatio"}}
	for _, p := range in.Published {
		byLabel := map[string]workload.PublishedFigure{}
		for _, f := range p.Figures {
			byLabel[f.Label+"\x00"+f.Metric] = f
		}
		for _, f := range p.Figures {
			measured := in.measuredFigure(f)
			vals := []float64{f.Value, measured, measured / f.Value, math.NaN(), math.NaN(), math.NaN()}
			if base, ok := byLabel[f.RelativeTo+"\x00"+f.Metric]; ok && f.RelativeTo != "" {
				vals[3] = f.Value / base.Value
				vals[4] = measured / in.measuredFigure(base)
				vals[5] = vals[4] / vals[3]
			}
			row := []string{p.Source, f.Label, f.Metric}
			csvRow := []string{p.Source, f.Label, f.Metric}
			for i, v := range vals {
				digits := 2
				if i < 2 {
					digits = 0
					switch f.Metric {
					case "publishMBps", "publishP99", "e2eP99":
						digits = 2
					case "costPerBillion":
						digits = 4
					}
				}
				if i >= 2 && v > 0 && v < 1 {
					// Ratios keep three significant digits.
					digits = max(2, 2-int(math.Floor(math.Log10(v))))
				}
				cell, csvCell := "–", ""
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					cell, csvCell = formatNum(v, digits), csvNum(v)
				}
				if i == 3 {
					row, csvRow = append(row, f.RelativeTo), append(csvRow, f.RelativeTo)
				}
				row, csvRow = append(row, cell), append(csvRow, csvCell)
			}
			t.Rows = append(t.Rows, row)
			t.CSV = append(t.CSV, csvRow)
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}
