package kube

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// untar extracts the tar file at path into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			_ = os.MkdirAll(dst, 0o755)
			continue
		}
		_ = os.MkdirAll(filepath.Dir(dst), 0o755)
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImageIsAnOCILayout builds an image of a stand-in binary and reads it
// back as an OCI image layout: named, one layer holding the binary, run as
// a non-root user with the binary as its entrypoint.
func TestImageIsAnOCILayout(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!stand-in binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.oci.tar")
	if err := BuildImage(ImageSpec{Binary: bin, Tag: "brokerbench:test", CABundle: "/nonexistent"}, out); err != nil {
		t.Fatal(err)
	}
	lay := filepath.Join(dir, "layout")
	untar(t, out, lay)
	idx, err := layout.ImageIndexFromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "brokerbench:test" ||
		m.Manifests[0].Annotations["io.containerd.image.name"] != "docker.io/library/brokerbench:test" {
		t.Fatalf("index: %+v %v", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil || cf.Config.Entrypoint[0] != "/brokerbench" || cf.Config.User != "65532" || cf.OS != "linux" {
		t.Fatalf("config: %+v %v", cf, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Name == "brokerbench" {
			data, _ := io.ReadAll(tr)
			found = string(data) == "#!stand-in binary" && h.Mode == 0o755
		}
	}
	if !found {
		t.Error("the layer does not hold the binary at /brokerbench, executable")
	}
}

func TestFullName(t *testing.T) {
	for in, want := range map[string]string{
		"brokerbench:v1":                    "docker.io/library/brokerbench:v1",
		"acme/brokerbench:v1":               "docker.io/acme/brokerbench:v1",
		"registry.example.com/bb:v1":        "registry.example.com/bb:v1",
		"localhost/bb:v1":                   "localhost/bb:v1",
		"127.0.0.1:5000/team/brokerbench:1": "127.0.0.1:5000/team/brokerbench:1",
	} {
		if got := FullName(in); got != want {
			t.Errorf("FullName(%q) = %q, want %q", in, got, want)
		}
	}
}
