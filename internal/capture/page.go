package capture

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"sort"

	"github.com/brokerbench/brokerbench/internal/report"
)

// pageTemplate is the capture's HTML page: its figures and charts, one
// self-contained file.
var pageTemplate = template.Must(template.New("capture").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Capture of {{.Shape.Topic}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}td,th{padding:.25rem .75rem;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}svg{max-width:100%;height:auto}figure{margin:1.5rem 0}</style>
</head><body>
<h1>Capture of {{.Shape.Topic}}</h1>
<p>From {{.Shape.Started.Format "2006-01-02 15:04:05 MST"}}, {{printf "%.0f" .Shape.Seconds}} s{{if .Shape.Interrupted}} (interrupted){{end}}: statistics only, no payload or key was kept.</p>
<table>{{range .Rows}}<tr><th>{{index . 0}}</th><td class="n">{{index . 1}}</td></tr>{{end}}</table>
{{if .Notes}}<h2>Replay notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Charts}}<figure>{{.}}</figure>{{end}}
</body></html>
`))

// Page returns the HTML page of s: its figures, the replay's notes, and
// charts of the rate over time, the sizes, the keys by rank with the
// fitted Zipf distribution, and the partitions.
func (s *Shape) Page(notes []string) ([]byte, error) {
	charts, err := s.charts()
	if err != nil {
		return nil, err
	}
	k := s.Keys
	rows := [][2]string{
		{"messages", fmt.Sprint(s.Messages)},
		{"rate mean / peak (msg/s)", fmt.Sprintf("%.1f / %d", s.Rate.Mean, s.Rate.Peak)},
		{"size mean / p50 / p90 / p99 / max (bytes)", fmt.Sprintf("%.0f / %d / %d / %d / %d", s.Sizes.Mean, s.Sizes.P50, s.Sizes.P90, s.Sizes.P99, s.Sizes.Max)},
		{"keyed / unkeyed messages", fmt.Sprintf("%d / %d", k.Keyed, k.Unkeyed)},
		{"distinct keys", fmt.Sprint(k.Distinct)},
		{"Zipf exponent (fitted)", fmt.Sprintf("%.3f", k.ZipfExponent)},
		{"share of the most frequent key", fmt.Sprintf("%.2f%%", 100*k.TopShare)},
		{"messages with headers / mean header bytes", fmt.Sprintf("%d / %.0f", s.Headers.Messages, s.Headers.MeanBytes)},
		{"partitions / skew (busiest over mean)", fmt.Sprintf("%d / %.2f", s.Partitions.Count, s.Partitions.Skew)},
	}
	for _, c := range sortedCodecs(s.Compression.ProducerCodecs) {
		rows = append(rows, [2]string{"messages compressed by their producer with " + c, fmt.Sprint(s.Compression.ProducerCodecs[c])})
	}
	codecs := make([]string, 0, len(s.Compression.Ratios))
	for c := range s.Compression.Ratios {
		codecs = append(codecs, c)
	}
	sort.Strings(codecs)
	for _, c := range codecs {
		rows = append(rows, [2]string{"compression ratio of the sample with " + c, fmt.Sprintf("%.3f", s.Compression.Ratios[c])})
	}
	var out bytes.Buffer
	err = pageTemplate.Execute(&out, struct {
		Shape  *Shape
		Rows   [][2]string
		Notes  []string
		Charts []template.HTML
	}{s, rows, notes, charts})
	return out.Bytes(), err
}

// charts draws the shape's charts as SVG.
func (s *Shape) charts() ([]template.HTML, error) {
	var rate, sizes, ranks, fitted, parts report.PlotSeries
	rate.Label = "messages per second"
	for i, n := range s.Rate.PerSecond {
		rate.X, rate.Y = append(rate.X, float64(i)), append(rate.Y, float64(n))
	}
	sizes.Label = "messages of at most this size"
	var below int64
	for _, b := range s.Sizes.Buckets {
		below += b.Count
		sizes.X, sizes.Y = append(sizes.X, float64(max(b.Max, 1))), append(sizes.Y, 100*float64(below)/float64(s.Messages))
	}
	ranks.Label, fitted.Label = "captured", fmt.Sprintf("Zipf, exponent %.3f over %d keys", s.Keys.ZipfExponent, s.Keys.Distinct)
	h := harmonic(int(min(s.Keys.Distinct, 1<<31)), s.Keys.ZipfExponent)
	for i, c := range s.Keys.Top {
		r := float64(i + 1)
		ranks.X, ranks.Y = append(ranks.X, r), append(ranks.Y, float64(c.Count))
		fitted.X, fitted.Y = append(fitted.X, r), append(fitted.Y, float64(s.Keys.Keyed)*math.Pow(r, -s.Keys.ZipfExponent)/h)
	}
	parts.Label = "messages"
	for i, n := range s.Partitions.Messages {
		parts.X, parts.Y = append(parts.X, float64(i)), append(parts.Y, float64(n))
	}
	type chart struct {
		title, x, y string
		logX, logY  bool
		lines       []report.PlotSeries
	}
	all := []chart{
		{"Rate", "seconds from the first message", "msg/s", false, false, []report.PlotSeries{rate}},
		{"Message sizes", "bytes", "% of messages (cumulative)", true, false, []report.PlotSeries{sizes}},
		{"Partitions", "partition", "messages", false, false, []report.PlotSeries{parts}},
	}
	if len(ranks.X) > 1 {
		all = append(all, chart{"Keys by rank", "rank", "messages", true, true, []report.PlotSeries{ranks, fitted}})
	}
	var out []template.HTML
	for _, c := range all {
		xs := c.lines[0].X
		if len(xs) == 0 {
			continue
		}
		if xs[0] == xs[len(xs)-1] { // one value: no scale to take the log of
			c.logX, c.logY = false, false
		}
		svg, err := report.LineChart(c.title, c.x, c.y, c.logX, c.logY, c.lines)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.title, err)
		}
		out = append(out, template.HTML(svg)) // drawn by gonum/plot from numbers alone
	}
	return out, nil
}
