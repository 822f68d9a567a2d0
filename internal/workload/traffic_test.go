package workload

import (
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/payload"
)

const trafficBase = "name: t\ndriver:\n  driver: kafka\n"

// TestMessageShapeFields: a size distribution, a compressibility target
// and Zipf keys are read, and messageSize becomes the pool's mean size.
func TestMessageShapeFields(t *testing.T) {
	w, err := Parse("t.yaml", []byte(trafficBase+`payloadPoolSize: 1000
messageSizes:
  buckets:
    - {min: 100, max: 100, weight: 3}
    - {min: 1000, max: 1000, weight: 1}
compressibility: {codec: zstd, ratio: 0.6}
keyDistributor: ZIPF
keyCount: 5000
keyZipfExponent: 1.2
`))
	if err != nil {
		t.Fatal(err)
	}
	if w.MessageSize != 325 || w.MaxMessageSize() != 1000 {
		t.Errorf("messageSize %d, max %d: want the mean 325 and the max 1000", w.MessageSize, w.MaxMessageSize())
	}
	if c := w.Compressibility; c == nil || c.Codec != "zstd" || c.Ratio != 0.6 {
		t.Errorf("compressibility %+v", c)
	}
	if k := w.Keys(); k != (payload.KeySpec{Mode: payload.ZipfKey, Count: 5000, ZipfS: 1.2}) {
		t.Errorf("keys %+v", k)
	}
	w.MessageSize = 2000 // as --message-size or a sweep would
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "mean of messageSizes") {
		t.Errorf("a messageSize set beside messageSizes: %v", err)
	}
	ln, err := Parse("t.yaml", []byte(trafficBase+"messageSizes:\n  logNormal: {median: 1000, sigma: 0.5, min: 100, max: 10000}\n"))
	if err != nil || ln.MessageSizes.LogNormal.Median != 1000 || ln.MessageSize < 1050 {
		t.Errorf("log-normal: %+v, %v", ln.MessageSizes, err)
	}
}

// TestMessageShapeErrors: each mistake names its field and line.
func TestMessageShapeErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"messageSize: 100\nmessageSizes:\n  logNormal: {median: 100, sigma: 1, min: 22, max: 1000}\n", "t.yaml:5: field \"messageSizes\": give either messageSize (line 4) or messageSizes"},
		{"messageSizes:\n  buckets:\n    - {min: 100, weight: 1}\n", "messageSizes.buckets[0].max\": missing"},
		{"messageSizes:\n  buckets:\n    - {min: 100, max: 50, weight: 1}\n", "buckets[0].max: 50 is below its min 100"},
		{"messageSizes:\n  logNormal: {median: 100}\n", "missing sigma, min, max"},
		{"messageSizes:\n  buckets: []\n  logNormal: {median: 100, sigma: 1, min: 22, max: 1000}\n", "must be a list of buckets"},
		{"payloadPoolSize: 10\nmessageSizes:\n  buckets:\n    - {min: 100, max: 100, weight: 99}\n    - {min: 9000, max: 9000, weight: 1}\n", "raise the payload pool size to at least 50"},
		{"compressibility: {codec: brotli, ratio: 0.5}\n", "field \"compressibility.codec\": must be one of gzip, lz4, snappy, zstd"},
		{"compressibility: {codec: zstd}\n", "needs codec"},
		{"payloadRandomRatio: 0.5\ncompressibility: {codec: zstd, ratio: 0.5}\n", "give either payloadRandomRatio"},
		{"keyDistributor: ZIPF\n", "needs keyZipfExponent"},
		{"keyDistributor: RANDOM_NANO\nkeyZipfExponent: 1\n", "only it takes one"},
		{"keyCount: 10\n", "applies to a keyDistributor that sends keys"},
	} {
		_, err := Parse("t.yaml", []byte(trafficBase+c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestOMBKeepsItsKeyDistributors: ZIPF is brokerbench's, not a value of
// OMB's keyDistributor.
func TestOMBKeepsItsKeyDistributors(t *testing.T) {
	_, err := Parse("omb.yaml", []byte("name: o\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 100\nuseRandomizedPayloads: true\nsubscriptionsPerTopic: 1\nproducersPerTopic: 1\nconsumerPerSubscription: 1\nproducerRate: 10\ntestDurationMinutes: 1\nkeyDistributor: ZIPF\n"))
	if err == nil || !strings.Contains(err.Error(), "keyDistributor") {
		t.Errorf("OMB file with ZIPF: %v", err)
	}
}
