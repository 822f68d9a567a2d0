package workload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/pacer"
)

// RateProfile is a target rate that changes over time, for all producers
// together (a workload's rateProfile block): exactly one of its shapes is
// set. Its time counts from the producers' start, the warmup included.
type RateProfile struct {
	Ramp   *Ramp   `json:"ramp,omitempty"`
	Steps  []Step  `json:"steps,omitempty"`
	Sine   *Sine   `json:"sine,omitempty"`
	Bursts *Bursts `json:"bursts,omitempty"`
	Curve  *Curve  `json:"curve,omitempty"`
}

// Ramp goes linearly from From to To msg/s over Over, then holds To.
type Ramp struct {
	From float64       `json:"from"`
	To   float64       `json:"to"`
	Over time.Duration `json:"overNs"`
}

// Step holds Rate msg/s for For; the last step holds for ever.
type Step struct {
	Rate float64       `json:"rate"`
	For  time.Duration `json:"forNs,omitempty"`
}

// Sine swings around Mean by Amplitude msg/s once per Period.
type Sine struct {
	Mean      float64       `json:"mean"`
	Amplitude float64       `json:"amplitude"`
	Period    time.Duration `json:"periodNs"`
}

// Bursts repeat Rate msg/s for On, then OffRate for Off.
type Bursts struct {
	Rate    float64       `json:"rate"`
	On      time.Duration `json:"onNs"`
	Off     time.Duration `json:"offNs"`
	OffRate float64       `json:"offRate,omitempty"`
}

// Curve follows the points read from File (seconds, msg/s), linearly
// between them, and holds the last rate after them.
type Curve struct {
	File   string        `json:"file"`
	Points []pacer.Point `json:"points"`
}

// Profile returns the profile's schedule.
func (p *RateProfile) Profile() pacer.Profile {
	switch {
	case p.Ramp != nil:
		return pacer.NewRamp(p.Ramp.From, p.Ramp.To, p.Ramp.Over)
	case p.Sine != nil:
		return pacer.Sine{Mean: p.Sine.Mean, Amplitude: p.Sine.Amplitude, Period: p.Sine.Period}
	case p.Bursts != nil:
		return pacer.NewBursts(p.Bursts.Rate, p.Bursts.OffRate, p.Bursts.On, p.Bursts.Off)
	case p.Curve != nil:
		return pacer.NewCurve(p.Curve.Points)
	}
	steps := make([]pacer.Step, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = pacer.Step{Rate: s.Rate, For: s.For}
	}
	return pacer.NewSteps(steps)
}

// Pacing returns the producers' total target rate over time: the rate
// profile, a constant rate, or nil for as fast as possible.
func (w *Workload) Pacing() pacer.Profile {
	switch {
	case w.RateProfile != nil:
		return w.RateProfile.Profile()
	case w.ProducerRate > 0:
		return pacer.Constant{PerSecond: w.ProducerRate}
	}
	return nil
}

// rateProfileShapes lists the shapes a rateProfile block may give.
var rateProfileShapes = []string{"bursts", "curve", "ramp", "sine", "steps"}

// rateProfileField decodes the rateProfile block. A curve's file is read
// at once, relative to the workload file's folder.
func rateProfileField(dst **RateProfile) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		p := &RateProfile{}
		before := len(d.errs)
		seen := d.mapping(v, "rateProfile", map[string]fieldSetter{
			"ramp":   rampField(&p.Ramp),
			"steps":  stepsField(&p.Steps),
			"sine":   sineField(&p.Sine),
			"bursts": burstsField(&p.Bursts),
			"curve":  curveField(&p.Curve),
		})
		if v.Kind == yaml.MappingNode && len(seen) != 1 && len(d.errs) == before {
			d.fail(v, key, "give exactly one shape of %s, got %d", strings.Join(rateProfileShapes, ", "), len(seen))
		}
		if len(d.errs) == before {
			*dst = p
		}
	}
}

// shapeFields decodes one shape's mapping v, its fields named
// rateProfile.SHAPE.FIELD in errors (see blockFields).
func shapeFields(d *decoder, shape, what string, v *yaml.Node, fields map[string]fieldSetter, required ...string) bool {
	return blockFields(d, "rateProfile."+shape, what, v, fields, required...)
}

// blockFields decodes the mapping v of the block at path, its fields
// named PATH.FIELD in errors, and fails for each of required that is
// missing (what names the block there: "a ramp"); it reports whether all
// went well.
func blockFields(d *decoder, path, what string, v *yaml.Node, fields map[string]fieldSetter, required ...string) bool {
	before := len(d.errs)
	named := map[string]fieldSetter{}
	for k, set := range fields {
		named[k] = prefixed(path, set)
	}
	seen := d.mapping(v, path, named)
	if v.Kind != yaml.MappingNode {
		return false
	}
	for _, k := range required {
		if seen[k] == nil {
			d.fail(v, path+"."+k, "missing: %s needs %s", what, strings.Join(required, ", "))
		}
	}
	return len(d.errs) == before
}

func rampField(dst **Ramp) fieldSetter {
	return func(d *decoder, _ string, v *yaml.Node) {
		r := &Ramp{}
		if shapeFields(d, "ramp", "a ramp", v, map[string]fieldSetter{
			"from": floatField(&r.From, 0, pacer.MaxRate),
			"to":   floatField(&r.To, 1e-3, pacer.MaxRate),
			"over": durationField(&r.Over, time.Millisecond),
		}, "from", "to", "over") {
			*dst = r
		}
	}
}

func sineField(dst **Sine) fieldSetter {
	return func(d *decoder, _ string, v *yaml.Node) {
		s := &Sine{}
		if !shapeFields(d, "sine", "a sine", v, map[string]fieldSetter{
			"mean":      floatField(&s.Mean, 1e-3, pacer.MaxRate),
			"amplitude": floatField(&s.Amplitude, 0, pacer.MaxRate),
			"period":    durationField(&s.Period, time.Millisecond),
		}, "mean", "amplitude", "period") {
			return
		}
		if s.Amplitude > s.Mean {
			d.fail(v, "rateProfile.sine.amplitude", "%v is above the mean %v: the rate would go below 0", s.Amplitude, s.Mean)
			return
		}
		*dst = s
	}
}

func burstsField(dst **Bursts) fieldSetter {
	return func(d *decoder, _ string, v *yaml.Node) {
		b := &Bursts{}
		if !shapeFields(d, "bursts", "bursts", v, map[string]fieldSetter{
			"rate":    floatField(&b.Rate, 1e-3, pacer.MaxRate),
			"on":      durationField(&b.On, time.Millisecond),
			"off":     durationField(&b.Off, time.Millisecond),
			"offRate": floatField(&b.OffRate, 0, pacer.MaxRate),
		}, "rate", "on", "off") {
			return
		}
		if b.OffRate >= b.Rate {
			d.fail(v, "rateProfile.bursts.offRate", "%v is not below the burst rate %v", b.OffRate, b.Rate)
			return
		}
		*dst = b
	}
}

// stepsField decodes a list of steps, each {rate: N, for: DURATION}; the
// last holds for ever and needs no for.
func stepsField(dst *[]Step) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		const field = "rateProfile.steps"
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			d.fail(v, field, "must be a list of steps, each {rate: MSG_PER_S, for: DURATION}; the last holds and needs no for")
			return
		}
		before := len(d.errs)
		var steps []Step
		for i, item := range v.Content {
			s := Step{}
			last := i == len(v.Content)-1
			what, required := "each step but the last", []string{"rate", "for"}
			if last {
				what, required = "the last step", required[:1]
			}
			if shapeFields(d, "steps", what, item, map[string]fieldSetter{
				"rate": floatField(&s.Rate, 0, pacer.MaxRate),
				"for":  durationField(&s.For, time.Millisecond),
			}, required...) && last && s.Rate == 0 {
				d.fail(item, field+".rate", "the last step's rate holds after it and must be positive")
			}
			steps = append(steps, s)
		}
		if len(d.errs) == before {
			*dst = steps
		}
	}
}

// curveField decodes a curve: the path of a CSV file of seconds,rate
// lines, relative to the workload file's folder.
func curveField(dst **Curve) fieldSetter {
	return func(d *decoder, _ string, v *yaml.Node) {
		const field = "rateProfile.curve"
		var file string
		stringField(&file)(d, field, v)
		if file == "" {
			return
		}
		path := file
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(d.file), file)
		}
		f, err := os.Open(path)
		if err != nil {
			d.fail(v, field, "cannot read %s: %v (a relative path is taken from the workload file's folder)", path, errors.Unwrap(err))
			return
		}
		defer f.Close()
		points, err := pacer.ReadCurve(f)
		if err != nil {
			where := path
			if ce := (*pacer.CurveError)(nil); errors.As(err, &ce) && ce.Line > 0 {
				where, err = fmt.Sprintf("%s:%d", path, ce.Line), errors.New(ce.Msg)
			}
			d.fail(v, field, "%s: %v", where, err)
			return
		}
		*dst = &Curve{File: path, Points: points}
	}
}
