package report

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Chart is one rendered chart.
type Chart struct {
	// Name is a file-name-safe identifier.
	Name    string
	Title   string
	Caption string
	SVG     []byte
	// Plot, if set, is the chart's data, which the page draws again as
	// an interactive chart (the SVG stays the export).
	Plot *Plot
}

// Plot is a line chart's data: its axes, lines and markers.
type Plot struct {
	XLabel string `json:"xLabel"`
	YLabel string `json:"yLabel"`
	LogX   bool   `json:"logX,omitempty"`
	LogY   bool   `json:"logY,omitempty"`
	// XTicks, if set, name the points of a categorical x axis: x = i is
	// XTicks[i] (a broker release, a run).
	XTicks []string     `json:"xTicks,omitempty"`
	Series []PlotSeries `json:"series"`
	Marks  []PlotMark   `json:"marks,omitempty"`
}

// PlotSeries is one line: its points, x ascending.
type PlotSeries struct {
	Label string    `json:"label"`
	X     []float64 `json:"x"`
	Y     []float64 `json:"y"`
}

// PlotMark is a vertical marker: a fault at a time, a change point at a
// run.
type PlotMark struct {
	At    float64 `json:"at"`
	Label string  `json:"label"`
}

// newPlot returns the data of a chart drawn from ss (labels as the chart
// shows them) and marks.
func newPlot(xLabel, yLabel string, ax axes, ss []series, marks []timeMark) *Plot {
	p := &Plot{XLabel: xLabel, YLabel: yLabel, LogX: ax.logX, LogY: ax.logY, XTicks: ax.xTicks}
	for _, s := range ss {
		ps := PlotSeries{Label: s.label}
		for _, pt := range s.xy {
			ps.X, ps.Y = append(ps.X, pt.X), append(ps.Y, pt.Y)
		}
		p.Series = append(p.Series, ps)
	}
	for _, m := range marks {
		p.Marks = append(p.Marks, PlotMark{At: m.at, Label: m.label})
	}
	return p
}

// series is one line of a chart.
type series struct {
	label string
	xy    plotter.XYs
	// errLo and errHi, if set, are error bars below and above each point.
	errLo, errHi []float64
}

const (
	chartWidth  = 7.5 * vg.Inch
	chartHeight = 3.6 * vg.Inch
)

// shortenLabels drops the " / "-separated parts every label shares, so
// legends name only what differs between the lines.
func shortenLabels(ss []series) {
	if len(ss) < 2 {
		return
	}
	parts := make([][]string, len(ss))
	count := map[string]int{}
	for i, s := range ss {
		parts[i] = strings.Split(s.label, " / ")
		seen := map[string]bool{}
		for _, p := range parts[i] {
			if !seen[p] {
				count[p]++
				seen[p] = true
			}
		}
	}
	for i := range ss {
		var keep []string
		for _, p := range parts[i] {
			if count[p] < len(ss) {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			ss[i].label = strings.Join(keep, " / ")
		}
	}
}

// timeMark is a vertical marker at a moment on a chart (a fault, the
// producers' stop on a time chart; a change point's run on a history
// chart), its label as the legend shows it.
type timeMark struct {
	at    float64
	label string
}

// axes are a chart's scales: logarithmic, or a categorical x axis whose
// point i is named xTicks[i].
type axes struct {
	logX, logY bool
	xTicks     []string
}

// render draws the series as lines with points and returns the SVG.
func render(title, xLabel, yLabel string, ax axes, ss []series, marks ...timeMark) ([]byte, error) {
	logX, logY := ax.logX, ax.logY
	shortenLabels(ss)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	var entries []legendEntry
	p.Add(plotter.NewGrid())
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if ax.xTicks != nil {
		p.X.Tick.Marker = categoryTicks(ax.xTicks)
		p.X.Min, p.X.Max = -0.5, float64(len(ax.xTicks))-0.5
	}
	for i, s := range ss {
		if len(s.xy) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", title, err)
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		if i >= len(palette) { // the colours come round again: dash the lines
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		line.Width = vg.Points(1.5)
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(1.5)
		if len(s.xy) > 60 {
			points.Radius = 0
		}
		p.Add(line, points)
		if s.errLo != nil {
			bars, err := plotter.NewYErrorBars(errorBars{s})
			if err != nil {
				return nil, err
			}
			bars.Color = c
			p.Add(bars)
		}
		if s.label != "" {
			entries = append(entries, legendEntry{s.label, line})
		}
	}
	if !logY {
		p.Y.Min = 0 // rates and latencies from zero: no exaggerated differences
	}
	if len(marks) > 0 {
		for _, m := range marks {
			p.X.Min, p.X.Max = min(p.X.Min, m.at), max(p.X.Max, m.at)
		}
		for i, m := range marks {
			line, err := plotter.NewLine(plotter.XYs{{X: m.at, Y: p.Y.Min}, {X: m.at, Y: p.Y.Max}})
			if err != nil {
				return nil, fmt.Errorf("chart %q: %w", title, err)
			}
			line.Color = color.RGBA{0x60, 0x60, 0x60, 0xff}
			line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(line)
			if i == 0 || m.label != marks[i-1].label {
				entries = append(entries, legendEntry{m.label, line})
			}
		}
	}
	if logX && p.X.Max > 0 {
		p.X.Max *= 1.6 // room for the last tick label
	}
	legend := newLegendStrip(entries)
	c, err := draw.NewFormattedCanvas(chartWidth, chartHeight+legend.height, "svg")
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, 0, legend.height, 0))
	legend.draw(dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return stripXMLHeader(buf.Bytes()), nil
}

// palette is ten qualitative colours that stay apart from each other
// (Tableau 10); gonum's default seven include two near-identical reds.
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0xe1, 0x57, 0x59, 0xff},
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

// legendEntry is one line's label and the line, which draws its sample.
type legendEntry struct {
	label string
	thumb plot.Thumbnailer
}

// legendStrip lays a chart's legend out below the plot, never over the
// data: in columns as wide as the longest label, filled top to bottom.
type legendStrip struct {
	entries    []legendEntry
	style      plot.Legend // text style and thumbnail width
	cols, rows int
	height     vg.Length // 0 without entries
}

const (
	legendLeftMargin = vg.Length(40)
	legendRowGap     = vg.Length(3)
	legendStripPad   = vg.Length(6)
)

func newLegendStrip(entries []legendEntry) legendStrip {
	l := legendStrip{entries: entries, style: plot.NewLegend()}
	l.style.TextStyle.Font.Size = vg.Points(10)
	if len(entries) == 0 {
		return l
	}
	// Text widths are gonum's measure of its own font; a browser may draw
	// the SVG's text in a wider one, hence the margin.
	var widest vg.Length
	for _, e := range entries {
		widest = max(widest, l.style.ThumbnailWidth+1.3*l.style.TextStyle.Rectangle("   "+e.label+"   ").Max.X)
	}
	l.cols = max(1, min(len(entries), int((chartWidth-legendLeftMargin)/widest)))
	l.rows = (len(entries) + l.cols - 1) / l.cols
	rowHeight := l.style.TextStyle.Rectangle("Xg").Max.Y + legendRowGap
	l.height = vg.Length(l.rows)*rowHeight + 2*legendStripPad
	return l
}

// draw draws the legend into the strip at the bottom of dc.
func (l legendStrip) draw(dc draw.Canvas) {
	colWidth := (chartWidth - legendLeftMargin) / vg.Length(max(1, l.cols))
	for col := range l.cols {
		first, last := col*l.rows, min(len(l.entries), (col+1)*l.rows)
		if first >= last {
			break
		}
		part := plot.NewLegend()
		part.Top, part.Left = true, true
		part.TextStyle, part.ThumbnailWidth, part.Padding = l.style.TextStyle, l.style.ThumbnailWidth, legendRowGap
		for _, e := range l.entries[first:last] {
			part.Add(e.label, e.thumb)
		}
		left := legendLeftMargin + vg.Length(col)*colWidth
		right := left + colWidth - chartWidth
		top := l.height - legendStripPad - (dc.Max.Y - dc.Min.Y)
		part.Draw(draw.Crop(dc, left, right, legendStripPad, top))
	}
}

// stripXMLHeader removes the XML declaration so the SVG can be inlined in
// HTML.
func stripXMLHeader(svg []byte) []byte {
	if i := bytes.Index(svg, []byte("<svg")); i > 0 {
		return svg[i:]
	}
	return svg
}

type errorBars struct{ s series }

func (e errorBars) Len() int                    { return len(e.s.xy) }
func (e errorBars) XY(i int) (float64, float64) { return e.s.xy[i].X, e.s.xy[i].Y }
func (e errorBars) YError(i int) (float64, float64) {
	return e.s.errLo[i], e.s.errHi[i]
}

// runLabel names one run of a group in a legend.
func runLabel(g *Group, r *results.Run) string {
	if len(g.Runs) > 1 {
		return fmt.Sprintf("%s #%d", g.Label, iteration(r))
	}
	return g.Label
}

// timeSeries charts one per-interval value of every run over time,
// until the producers stopped.
func (in *Input) timeSeries(name, title, yLabel string, value func(iv results.Interval) float64) (Chart, error) {
	var ss []series
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			ss = append(ss, intervalSeries(runLabel(g, r), r, false, value))
		}
	}
	return in.timeChart(name, title, yLabel, ss, in.faultMarks())
}

// intervalSeries is one per-interval value of r as a line labelled
// label: the drain after the producers stopped included if drain is set;
// NaN values are left out.
func intervalSeries(label string, r *results.Run, drain bool, value func(iv results.Interval) float64) series {
	s := series{label: label}
	for _, iv := range r.Intervals {
		if iv.Phase == results.Drain && !drain {
			continue
		}
		if v := value(iv); !math.IsNaN(v) {
			s.xy = append(s.xy, plotter.XY{X: iv.EndSeconds, Y: v})
		}
	}
	return s
}

// timeChart draws ss and marks over the time since producing started.
func (in *Input) timeChart(name, title, yLabel string, ss []series, marks []timeMark) (Chart, error) {
	const xLabel = "time since producing started (s)"
	svg, err := render(title, xLabel, yLabel, axes{}, ss, marks...)
	return Chart{Name: name, Title: title, SVG: svg, Plot: newPlot(xLabel, yLabel, axes{}, ss, marks)}, err
}

// consumerLagChart charts every run's backlog, the messages published
// and not yet received, summed over its subscriptions: through the
// measurement and the drain after the producers stopped, which a marker
// shows, so a backlog that grows under slow consumers and the time it
// takes to drain are both seen. ok is false when no run had consumers.
func (in *Input) consumerLagChart() (c Chart, ok bool, err error) {
	var ss []series
	marks := in.faultMarks()
	stops := map[float64]bool{}
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			if r.Workload == nil || r.Workload.Consumers() == 0 {
				continue
			}
			ss = append(ss, intervalSeries(runLabel(g, r), r, true, func(iv results.Interval) float64 { return float64(iv.Backlog) }))
			if at, drained := producersStopped(r); drained && !stops[at] {
				stops[at] = true
				marks = append(marks, timeMark{at: at, label: "producers stopped"})
			}
		}
	}
	if len(ss) == 0 {
		return Chart{}, false, nil
	}
	c, err = in.timeChart("consumer-lag", "Consumer lag (published, not yet received; drain included)", "messages", ss, marks)
	c.Caption = "Summed over subscriptions, at the end of each interval. After the producers stopped, the consumers drain what is left; a backlog still there at the end was not drained within the drain timeout."
	return c, true, err
}

// producersStopped returns when r's producers stopped: the end of its
// last interval before the drain; ok is false for a run without a drain.
func producersStopped(r *results.Run) (at float64, ok bool) {
	for _, iv := range r.Intervals {
		if iv.Phase == results.Drain {
			return at, true
		}
		at = iv.EndSeconds
	}
	return 0, false
}

// profileChart charts, for every run with a rate profile, its target
// rate per interval beside the publish rate it achieved; ok is false when
// no run had a profile.
func (in *Input) profileChart() (c Chart, ok bool, err error) {
	var ss []series
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			if r.Workload == nil || r.Workload.RateProfile == nil {
				continue
			}
			label := runLabel(g, r)
			ss = append(ss,
				intervalSeries(label+" / target", r, false, func(iv results.Interval) float64 { return iv.TargetRate }),
				intervalSeries(label+" / achieved", r, false, func(iv results.Interval) float64 { return iv.PublishRate }))
		}
	}
	if len(ss) == 0 {
		return Chart{}, false, nil
	}
	c, err = in.timeChart("rate-profile", "Rate profile: target vs achieved publish rate", "msgs/s", ss, in.faultMarks())
	c.Caption = fmt.Sprintf("The target is the profile's mean over each interval, the achieved rate the acknowledgements in it; an interval more than %.0f%% below its target fell short.", 100*results.ProfileShortfall)
	return c, true, err
}

// faultMarks are the fault events of every run, as chart markers
// labelled "fault: ACTION".
func (in *Input) faultMarks() []timeMark {
	var marks []timeMark
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			for _, ev := range r.Faults {
				marks = append(marks, timeMark{at: ev.AtSeconds, label: "fault: " + ev.Action})
			}
		}
	}
	return marks
}

// percentileChart charts a latency distribution per run from its encoded
// histogram: x is the percentile on a log scale of 1/(1-p), y the latency.
func (in *Input) percentileChart(name, title string, encoded func(r *results.Run) string) (Chart, bool, error) {
	var ss []series
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			enc := encoded(r)
			if enc == "" {
				continue
			}
			h, err := metrics.Decode(enc)
			if err != nil {
				return Chart{}, false, fmt.Errorf("%s: %w", g.Label, err)
			}
			if h.TotalCount() == 0 {
				continue
			}
			s := series{label: runLabel(g, r)}
			for _, p := range []float64{0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999} {
				v := float64(h.ValueAtPercentile(p)) / 1000
				s.xy = append(s.xy, plotter.XY{X: 100 / (100 - p), Y: math.Max(v, 0.001)})
			}
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return Chart{}, false, nil
	}
	const xLabel, yLabel = "percentile, as 1/(1-p): 2 = p50, 10 = p90, 100 = p99, 1000 = p99.9", "latency (ms)"
	svg, err := render(title, xLabel, yLabel, axes{logX: true, logY: true}, ss)
	return Chart{Name: name, Title: title, SVG: svg, Plot: newPlot(xLabel, yLabel, axes{logX: true, logY: true}, ss, nil),
		Caption: "Each line is one run's measured latency distribution, read from its HdrHistogram."}, true, err
}

// sweepCharts draw, for every numeric swept parameter, throughput against
// its value: one line per configuration sharing the other settings, the
// median of the iterations with the range as error bars.
func (in *Input) sweepCharts() ([]Chart, error) {
	var charts []Chart
	for _, name := range in.sweptParams() {
		lines := map[string]*series{}
		var order []string
		for _, g := range in.Groups {
			x, err := strconv.ParseFloat(param(g.first(), name), 64)
			if err != nil {
				continue
			}
			key := lineKey(g, name)
			s := lines[key]
			if s == nil {
				s = &series{label: key, errLo: []float64{}, errHi: []float64{}}
				lines[key] = s
				order = append(order, key)
			}
			var rates []float64
			for _, r := range g.Runs {
				rates = append(rates, r.Measured.PublishRate)
			}
			med, lo, hi := spread(rates)
			s.xy = append(s.xy, plotter.XY{X: x, Y: med})
			s.errLo = append(s.errLo, med-lo)
			s.errHi = append(s.errHi, hi-med)
		}
		if len(order) == 0 {
			continue
		}
		var ss []series
		for _, k := range order {
			s := lines[k]
			sortSeries(s)
			ss = append(ss, *s)
		}
		title := "Throughput by " + name
		// A log axis has no place for 0 (an abort rate of none).
		logX := !slices.ContainsFunc(ss, func(s series) bool {
			return slices.ContainsFunc(s.xy, func(p plotter.XY) bool { return p.X <= 0 })
		})
		svg, err := render(title, name, "msgs/s (median, range as bars)", axes{logX: logX}, ss)
		if err != nil {
			return nil, err
		}
		charts = append(charts, Chart{Name: "sweep-" + name, Title: title, SVG: svg})
	}
	return charts, nil
}

// lineKey labels a sweep line: the configuration without the swept
// parameter.
func lineKey(g *Group, swept string) string {
	s := g.first().Study
	key := s.Setup
	if s.Workload != "" {
		key = s.Workload + " / " + key
	}
	for _, p := range s.Params {
		if p.Name != swept {
			key += " / " + p.Name + "=" + p.Value
		}
	}
	return key
}

func sortSeries(s *series) {
	idx := make([]int, len(s.xy))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.xy[idx[a]].X < s.xy[idx[b]].X })
	xy, lo, hi := make(plotter.XYs, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		xy[i], lo[i], hi[i] = s.xy[j], s.errLo[j], s.errHi[j]
	}
	s.xy, s.errLo, s.errHi = xy, lo, hi
}

// timeChart is one per-interval value charted over time.
type timeChart struct {
	name, title, y string
	v              func(iv results.Interval) float64
}

// Charts renders every chart the input supports.
func (in *Input) Charts() ([]Chart, error) {
	var charts []Chart
	add := func(c Chart, err error) error {
		if err != nil {
			return err
		}
		charts = append(charts, c)
		return nil
	}
	sweeps, err := in.sweepCharts()
	if err != nil {
		return nil, err
	}
	charts = append(charts, sweeps...)
	releases, err := in.releaseCharts()
	if err != nil {
		return nil, err
	}
	charts = append(charts, releases...)
	nan := math.NaN()
	latency := func(pick func(iv results.Interval) metrics.Latency, q func(l metrics.Latency) float64) func(iv results.Interval) float64 {
		return func(iv results.Interval) float64 {
			if l := pick(iv); l.Count > 0 {
				return q(l)
			}
			return nan
		}
	}
	pubL := func(iv results.Interval) metrics.Latency { return iv.PublishLatency }
	e2eL := func(iv results.Interval) metrics.Latency { return iv.EndToEndLatency }
	p50 := func(l metrics.Latency) float64 { return l.P50 }
	p99 := func(l metrics.Latency) float64 { return l.P99 }
	// The first ratesCharts of steps are the rates.
	const ratesCharts = 2
	steps := []timeChart{
		{"publish-rate", "Publish rate", "msgs/s", func(iv results.Interval) float64 { return iv.PublishRate }},
		{"consume-rate", "Consume rate", "msgs/s", func(iv results.Interval) float64 { return iv.ConsumeRate }},
		{"publish-latency-p50", "Publish latency p50 per interval", "ms", latency(pubL, p50)},
		{"e2e-latency-p50", "End-to-end latency p50 per interval", "ms", latency(e2eL, p50)},
		{"publish-latency-p99", "Publish latency p99 per interval", "ms", latency(pubL, p99)},
		{"e2e-latency-p99", "End-to-end latency p99 per interval", "ms", latency(e2eL, p99)},
	}
	if in.hasSystem() {
		sys := func(f func(s *results.System) float64) func(iv results.Interval) float64 {
			return func(iv results.Interval) float64 {
				if iv.System == nil {
					return nan
				}
				return f(iv.System)
			}
		}
		broker := func(f func(s *results.System) float64) func(iv results.Interval) float64 {
			return sys(func(s *results.System) float64 {
				if !s.BrokerSampled {
					return nan
				}
				return f(s)
			})
		}
		steps = append(steps, []timeChart{
			{"cpu-busy", "Machine CPU busy (user + system + iowait)", "% of all cores", sys(func(s *results.System) float64 { return s.CPUUser + s.CPUSystem + s.CPUIowait })},
			{"cpu-iowait", "Machine CPU iowait", "% of all cores", sys(func(s *results.System) float64 { return s.CPUIowait })},
			{"broker-cpu", "Broker process CPU", "% of one core", broker(func(s *results.System) float64 { return s.BrokerCPU })},
			{"client-cpu", "brokerbench process CPU", "% of one core", sys(func(s *results.System) float64 { return s.ClientCPU })},
			{"disk-write", "Disk writes", "MB/s", sys(func(s *results.System) float64 { return s.DiskWriteMBps })},
			{"network", "Network received (all interfaces, loopback included)", "MB/s", sys(func(s *results.System) float64 { return s.NetRxMBps })},
			{"broker-memory", "Broker process resident memory", "MB", broker(func(s *results.System) float64 { return s.BrokerRSSMB })},
		}...)
	}
	for i, s := range steps {
		if err := add(in.timeSeries(s.name, s.title, s.y, s.v)); err != nil {
			return nil, err
		}
		if i != ratesCharts-1 {
			continue
		}
		// Beside the rates: the profile they were to follow, and the
		// lag of consumers that did not keep up.
		for _, optional := range []func() (Chart, bool, error){in.profileChart, in.consumerLagChart} {
			c, ok, err := optional()
			if err != nil {
				return nil, err
			}
			if ok {
				charts = append(charts, c)
			}
		}
	}
	broker, err := in.brokerMetricCharts()
	if err != nil {
		return nil, err
	}
	charts = append(charts, broker...)
	for _, pc := range []struct {
		name, title string
		enc         func(r *results.Run) string
	}{
		{"publish-latency-distribution", "Publish latency distribution (measurement phase)", func(r *results.Run) string { return r.Histograms.PublishLatency }},
		{"e2e-latency-distribution", "End-to-end latency distribution (measurement phase)", func(r *results.Run) string { return r.Histograms.EndToEndLatency }},
	} {
		c, ok, err := in.percentileChart(pc.name, pc.title, pc.enc)
		if err != nil {
			return nil, err
		}
		if ok {
			charts = append(charts, c)
		}
	}
	return charts, nil
}

// brokerMetricCharts charts the brokers' own headline metrics
// (brokermetrics.Headline), one chart per metric with a line per run and
// label set, for the series that changed during some run: a figure that
// stayed the same throughout (under-replicated partitions that stayed 0)
// says nothing over time. Every series stays in the results.
func (in *Input) brokerMetricCharts() ([]Chart, error) {
	lo, hi := map[string]float64{}, map[string]float64{}
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			for _, iv := range r.Intervals {
				if iv.System == nil || iv.Phase == results.Drain {
					continue
				}
				for k, v := range iv.System.Broker {
					if _, ok := lo[k]; !ok {
						lo[k], hi[k] = v, v
					}
					lo[k], hi[k] = min(lo[k], v), max(hi[k], v)
				}
			}
		}
	}
	byName := map[string][]string{}
	for k := range lo {
		name, _, _ := strings.Cut(k, "{")
		if lo[k] != hi[k] && brokermetrics.Headline(name) {
			byName[name] = append(byName[name], k)
		}
	}
	var charts []Chart
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		c, err := in.brokerChart(name, slices.Sorted(slices.Values(byName[name])))
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	return charts, nil
}

// brokerChart draws the broker series keys of metric name over time: a
// line per run and series.
func (in *Input) brokerChart(name string, keys []string) (Chart, error) {
	var ss []series
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			for _, k := range keys {
				s := series{label: runLabel(g, r)}
				if _, labels, ok := strings.Cut(k, "{"); ok {
					s.label += " " + strings.TrimSuffix(labels, "}")
				}
				for _, iv := range r.Intervals {
					if iv.System == nil || iv.Phase == results.Drain {
						continue
					}
					if v, ok := iv.System.Broker[k]; ok {
						s.xy = append(s.xy, plotter.XY{X: iv.EndSeconds, Y: v})
					}
				}
				if len(s.xy) > 0 {
					ss = append(ss, s)
				}
			}
		}
	}
	unit := "as reported"
	if strings.HasSuffix(name, "_per_second") {
		unit = "per second"
	}
	title := "Broker metric " + name
	const xLabel = "time since producing started (s)"
	marks := in.faultMarks()
	svg, err := render(title, xLabel, unit, axes{}, ss, marks...)
	return Chart{Name: "broker-" + chartFileName(name), Title: title, SVG: svg, Plot: newPlot(xLabel, unit, axes{}, ss, marks),
		Caption: "The brokers' own figures, read at the end of each interval, summed over nodes."}, err
}

// chartFileName makes a series key a file name: letters, digits and
// dashes.
func chartFileName(key string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(key) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// hasSystem reports whether any run sampled system metrics.
func (in *Input) hasSystem() bool {
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			for _, iv := range r.Intervals {
				if iv.System != nil {
					return true
				}
			}
		}
	}
	return false
}

// LineChart draws lines as the report draws its charts and returns the
// SVG, for pages of brokerbench's own besides the report (a capture's).
// A log axis needs every value on it above 0.
func LineChart(title, xLabel, yLabel string, logX, logY bool, lines []PlotSeries) ([]byte, error) {
	ss := make([]series, len(lines))
	for i, l := range lines {
		ss[i].label = l.Label
		for j := range min(len(l.X), len(l.Y)) {
			ss[i].xy = append(ss[i].xy, plotter.XY{X: l.X[j], Y: l.Y[j]})
		}
	}
	return render(title, xLabel, yLabel, axes{logX: logX, logY: logY}, ss)
}
