package workload

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/secret"
)

// Property is one broker client or topic setting, in the broker's own naming
// (for Kafka: "linger.ms", "acks", ...), with where it was set.
type Property struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// File and Line locate the setting for error messages; Line is 0 for
	// settings that did not come from a file.
	File string `json:"-"`
	Line int    `json:"-"`
}

// Properties is an ordered list of settings; a later entry for the same key
// overrides an earlier one.
type Properties []Property

// Map returns the effective settings, the last value of each key winning.
func (p Properties) Map() map[string]Property {
	m := make(map[string]Property, len(p))
	for _, prop := range p {
		m[prop.Key] = prop
	}
	return m
}

// Effective returns the settings with duplicates resolved, sorted by key.
func (p Properties) Effective() Properties {
	m := p.Map()
	out := make(Properties, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// Get returns the effective value of key and whether it is set.
func (p Properties) Get(key string) (string, bool) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].Key == key {
			return p[i].Value, true
		}
	}
	return "", false
}

// Error returns a FieldError located at prop.
func (prop Property) Error(format string, args ...any) error {
	return &FieldError{File: prop.File, Line: prop.Line, Field: prop.Key, Msg: fmt.Sprintf(format, args...)}
}

// DriverConfig selects a broker driver and holds its settings. It is read
// from an OMB driver file, a brokerbench driver file, or a workload's inline
// "driver" section.
type DriverConfig struct {
	// Name is the registered driver name, such as "kafka".
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	Format Format `json:"format"`
	// DriverClass is the OMB driver class the file named, if any.
	DriverClass       string `json:"driverClass,omitempty"`
	ReplicationFactor int    `json:"replicationFactor"`
	// Reset is OMB's flag for deleting leftover benchmark topics first.
	Reset bool `json:"reset,omitempty"`

	Topic    Properties `json:"topicConfig"`
	Common   Properties `json:"commonConfig"`
	Producer Properties `json:"producerConfig"`
	Consumer Properties `json:"consumerConfig"`
}

// ombDriverClasses maps OMB driver classes to brokerbench driver names,
// and ombTopLevel holds the settings OMB's driver files carry at their
// top level, as the brokers' modules declare them (RegisterOMBDriverClass).
var (
	ombDriverClassesMu sync.RWMutex
	ombDriverClasses   = map[string]string{}
	ombTopLevel        = map[string]bool{}
)

// RegisterOMBDriverClass makes OMB driver files naming class read as
// configs of the driver called name. Such files may carry the settings
// topLevel at their top level (OMB's natsHostUrl, amqpUris): they are
// kept in commonConfig under the same name, where the driver validates
// them (a list, such as amqpUris, as its items joined by commas). It is
// called by brokers.Register for the classes a broker's module declares,
// and panics if class is another driver's.
func RegisterOMBDriverClass(class, name string, topLevel ...string) {
	ombDriverClassesMu.Lock()
	defer ombDriverClassesMu.Unlock()
	if other, ok := ombDriverClasses[class]; ok && other != name {
		panic(fmt.Sprintf("OMB driver class %q registered for %q and %q", class, other, name))
	}
	ombDriverClasses[class] = name
	for _, key := range topLevel {
		ombTopLevel[key] = true
	}
}

// ombTopLevelSettings returns the top-level settings of every OMB
// driver class registered.
func ombTopLevelSettings() []string {
	ombDriverClassesMu.RLock()
	defer ombDriverClassesMu.RUnlock()
	return sortedKeys(ombTopLevel)
}

// ombDriverName returns the driver name of an OMB driver class, and the
// classes known.
func ombDriverName(class string) (string, bool, []string) {
	ombDriverClassesMu.RLock()
	defer ombDriverClassesMu.RUnlock()
	name, ok := ombDriverClasses[class]
	return name, ok, sortedKeys(ombDriverClasses)
}

// LoadDriver reads a driver config file (OMB or brokerbench format).
func LoadDriver(path string) (*DriverConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: read driver config: %w (check the path)", ErrInvalid, err)
	}
	return ParseDriver(path, data)
}

// ParseDriver reads a driver config from data; name is used in errors.
func ParseDriver(name string, data []byte) (*DriverConfig, error) {
	root, err := parseYAML(name, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name}
	c := d.driverConfig(root, true)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return c, nil
}

// driverConfig decodes a driver mapping. topLevel is true for a file of its
// own, where OMB's "driverClass" and a display "name" are allowed.
func (d *decoder) driverConfig(n *yaml.Node, topLevel bool) *DriverConfig {
	c := &DriverConfig{Source: d.file, Format: Native, ReplicationFactor: 1}
	var name, driver string
	props := func(dst *Properties) fieldSetter {
		return func(d *decoder, key string, v *yaml.Node) { *dst = d.properties(key, v) }
	}
	fields := map[string]fieldSetter{
		"driver":            stringField(&driver),
		"replicationFactor": intField(&c.ReplicationFactor, 1, 100),
		"reset":             boolField(&c.Reset),
		"topicConfig":       props(&c.Topic),
		"commonConfig":      props(&c.Common),
		"producerConfig":    props(&c.Producer),
		"consumerConfig":    props(&c.Consumer),
	}
	if topLevel {
		fields["name"] = stringField(&name)
		fields["driverClass"] = stringField(&c.DriverClass)
		// Sections of settings OMB's driver files for other brokers than
		// Kafka carry at their top level (its MQTT and Pulsar drivers'
		// client, producer and consumer), read as commonConfig,
		// producerConfig and consumerConfig, where the driver validates
		// them.
		for key, dst := range map[string]*Properties{"client": &c.Common, "producer": &c.Producer, "consumer": &c.Consumer} {
			fields[key] = func(d *decoder, key string, v *yaml.Node) { *dst = append(*dst, d.nested(key, "", v)...) }
		}
		for _, key := range ombTopLevelSettings() {
			fields[key] = func(d *decoder, key string, v *yaml.Node) {
				if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
					return // no value (OMB's RocketMQ files' "accessKey:"): left unset, as OMB's drivers leave it
				}
				if s, ok := scalarOrList(d, key, v); ok {
					c.Common = append(c.Common, Property{Key: key, Value: s, File: d.file, Line: v.Line})
					d.secrets(key, &c.Common[len(c.Common)-1])
				}
			}
		}
	}
	seen := d.mapping(n, "a driver config", fields)
	switch {
	case c.DriverClass != "":
		c.Format = OMB
		mapped, ok, known := ombDriverName(c.DriverClass)
		if !ok {
			d.fail(seen["driverClass"], "driverClass", "unknown OMB driver class %q; known: %s", c.DriverClass, strings.Join(known, ", "))
		}
		c.Name = mapped
	case driver != "":
		c.Name = driver
	case topLevel && name != "":
		c.Name = strings.ToLower(name)
	default:
		d.fail(n, "driver", `missing: name the broker driver, for example "driver: kafka"`)
	}
	return c
}

// nested decodes a section of OMB's Pulsar driver file (client:,
// producer:, consumer:, kept as commonConfig, producerConfig and
// consumerConfig): a mapping whose nested mappings' keys are joined with
// dots, prefix first ("persistence.ensembleSize"). A setting without a
// value (YAML null) is left unset, as OMB's driver leaves it.
func (d *decoder) nested(field, prefix string, v *yaml.Node) Properties {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		d.fail(v, field, "must be a mapping of settings")
		return nil
	}
	var props Properties
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		key := prefix + k.Value
		switch {
		case val.Kind == yaml.MappingNode:
			props = append(props, d.nested(field, key+".", val)...)
		case val.Kind != yaml.ScalarNode:
			d.fail(val, field+"."+key, "must be a single value or a mapping")
		case val.Tag == "!!null": // no value: left unset
		default:
			props = append(props, Property{Key: key, Value: val.Value, File: d.file, Line: k.Line})
			d.secrets(field, &props[len(props)-1])
		}
	}
	return props
}

// properties decodes either a Java-properties text block (OMB style) or a
// YAML mapping of key: value.
func (d *decoder) properties(field string, v *yaml.Node) Properties {
	switch {
	case v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == ""):
		return nil
	case v.Kind == yaml.ScalarNode:
		// A block scalar's text starts on the line after its indicator.
		first := v.Line
		if v.Style == yaml.LiteralStyle || v.Style == yaml.FoldedStyle {
			first++
		}
		props, err := ParseProperties(v.Value)
		for i := range props {
			props[i].File = d.file
			props[i].Line += first - 1
			d.secrets(field, &props[i])
		}
		if err != nil {
			d.fail(v, field, "%v", err)
		}
		return props
	case v.Kind == yaml.MappingNode:
		var props Properties
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], v.Content[i+1]
			if val.Kind != yaml.ScalarNode {
				d.fail(val, field+"."+k.Value, "must be a single value")
				continue
			}
			props = append(props, Property{Key: k.Value, Value: val.Value, File: d.file, Line: k.Line})
			d.secrets(field, &props[len(props)-1])
		}
		return props
	default:
		d.fail(v, field, "must be Java-properties text (key=value lines) or a mapping of key: value")
		return nil
	}
}

// ParseProperties parses Java-properties text: one key=value, key:value or
// "key value" per line; '#' and '!' start comment lines; a trailing backslash
// continues a value on the next line. Line numbers in the result count from 1
// at the first line of text.
func ParseProperties(text string) (Properties, error) {
	var props Properties
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + strings.TrimSpace(lines[i])
		}
		sep := strings.IndexAny(line, "=: \t")
		if sep <= 0 {
			return props, fmt.Errorf("line %d: %q is not a key=value property", lineNo, line)
		}
		key := line[:sep]
		value := strings.TrimSpace(line[sep+1:])
		if line[sep] == ' ' || line[sep] == '\t' {
			value = strings.TrimSpace(strings.TrimLeft(value, "=:"))
		}
		props = append(props, Property{Key: key, Value: value, Line: lineNo})
	}
	return props, nil
}

// secrets expands the references to secrets in p's value (${env:NAME},
// ${file:PATH}), and has every secret value, expanded or given as it is
// under a secret-looking key, kept out of brokerbench's outputs.
func (d *decoder) secrets(field string, p *Property) {
	v, _, err := secret.Expand(p.Value)
	if err != nil {
		d.errs = append(d.errs, &FieldError{File: d.file, Line: p.Line, Field: field + " " + p.Key, Msg: err.Error()})
		return
	}
	p.Value = v
	if isSecret(p.Key) {
		secret.Keep(v)
	}
}

// Redacted returns a copy of c whose secret-looking values are replaced by
// "[redacted]", for results files.
func (c *DriverConfig) Redacted() *DriverConfig {
	out := *c
	red := func(p Properties) Properties {
		var o Properties
		for _, prop := range p.Effective() {
			if isSecret(prop.Key) {
				prop.Value = "[redacted]"
			}
			o = append(o, prop)
		}
		return o
	}
	out.Topic, out.Common, out.Producer, out.Consumer = red(c.Topic), red(c.Common), red(c.Producer), red(c.Consumer)
	return &out
}

// IsSecret reports whether a setting named key looks like it holds a
// secret (password, secret, token, JAAS config, credentials, key
// material): its value is then never shown.
func IsSecret(key string) bool { return isSecret(key) }

func isSecret(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "pass") || strings.HasSuffix(k, "pw") { // OMB's redisPass
		return true
	}
	for _, s := range []string{"password", "secret", "jaas", "token", "credential", "sasl.username", "keystore.key", "key.pem", "private", ".key"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// scalarOrList returns a single value, or a list's items joined by commas.
func scalarOrList(d *decoder, key string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.SequenceNode {
		return scalar(d, key, v, "a single value or a list")
	}
	items := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		s, ok := scalar(d, key, item, "a list of single values")
		if !ok {
			return "", false
		}
		items = append(items, s)
	}
	return strings.Join(items, ","), true
}
