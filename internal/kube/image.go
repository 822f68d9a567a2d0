package kube

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ImageSpec is what goes into brokerbench's container image.
type ImageSpec struct {
	// Binary is the static brokerbench executable to put at /brokerbench.
	Binary string
	// Tag names the image ("brokerbench:v1.2.3"), as containerd's import
	// and a registry push will call it.
	Tag string
	// CABundle, if it exists, is copied to /etc/ssl/certs so that TLS to
	// brokers with public certificates works.
	CABundle string
}

// nonRootUID is the image's user: not root, as the pods' security context
// requires.
const nonRootUID = 65532

// BuildImage writes an OCI image layout, as a tar file at out: the static
// binary on an empty base (no shell, no package manager), run as a
// non-root user. No Docker engine is needed; containerd imports it with
// 'ctr -n k8s.io images import', and registry tools (crane, skopeo) push
// it.
func BuildImage(s ImageSpec, out string) error {
	layer, err := imageLayer(s)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", runtime.GOARCH, v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{"/brokerbench"}
	cf.Config.User = fmt.Sprint(nonRootUID)
	cf.Config.Env = []string{"HOME=/tmp"}
	cf.Config.WorkingDir = "/tmp"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "brokerbench-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	names := map[string]string{"org.opencontainers.image.ref.name": s.Tag, "io.containerd.image.name": FullName(s.Tag)}
	if err := p.AppendImage(img, layout.WithAnnotations(names)); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// FullName is an image name as Kubernetes' container runtime looks it up:
// a name without a registry is Docker Hub's ("brokerbench:v1" is
// "docker.io/library/brokerbench:v1"), so an image imported under the
// short name would not be found.
func FullName(image string) string {
	first, rest, found := strings.Cut(image, "/")
	switch {
	case !found:
		return "docker.io/library/" + image
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return image
	default:
		return "docker.io/" + first + "/" + rest
	}
}

// imageLayer is the image's one layer: the binary, the CA bundle and a
// writable /tmp.
func imageLayer(s ImageSpec) (v1.Layer, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("read the binary for the image: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	add := func(h *tar.Header, data []byte) error {
		h.ModTime = epoch
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	type entry struct {
		h    tar.Header
		data []byte
	}
	entries := []entry{
		{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
		{tar.Header{Name: "brokerbench", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))}, bin},
	}
	if ca, err := os.ReadFile(s.CABundle); err == nil {
		entries = append(entries,
			entry{tar.Header{Name: "etc/ssl/certs/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
			entry{tar.Header{Name: "etc/ssl/certs/ca-certificates.crt", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(ca))}, ca})
	}
	for _, e := range entries {
		if err := add(&e.h, e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// tarDir writes the files under dir to a tar file at out.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return fmt.Errorf("write the image to %s: %w", out, err)
	}
	return nil
}
