// Package kube runs a distributed brokerbench run on Kubernetes: workers
// as an Indexed Job behind a headless Service, the coordinator as a Job
// that runs the test and exits, their files in a ConfigMap. It builds
// those objects, creates them through the API server (kubeapi), follows
// them, copies the results out of the coordinator's log, and deletes what
// it created.
package kube

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
)

// WorkerPort is the port workers serve the worker API on.
const WorkerPort = 7070

// Labels every object carries.
const (
	LabelName = "app.kubernetes.io/name"
	LabelRun  = "brokerbench.io/run"
	LabelRole = "brokerbench.io/role"
)

// configDir is where the ConfigMap is mounted in every pod.
const configDir = "/etc/brokerbench"

// Spec is what a run on Kubernetes needs.
type Spec struct {
	// Name prefixes every object's name ("bb-1a2b3c4d"): lower-case
	// letters, digits and '-', at most 40 characters.
	Name      string
	Namespace string
	Image     string
	// PullPolicy is the containers' image pull policy: Always,
	// IfNotPresent (the default) or Never.
	PullPolicy string
	// Workers is how many worker pods run.
	Workers int
	// HostNetwork runs every pod in the node's network namespace: worker
	// i then serves on its own loopback address 127.1.i.1 (one node
	// only), and the pods reach a broker on the node's loopback.
	HostNetwork bool
	// Files are the ConfigMap's files by name: "workload.yaml" and, if
	// given, "driver.yaml".
	Files map[string]string
	// RunArgs are the coordinator's 'brokerbench run' arguments after the
	// workload (overrides, --broker, --placement...).
	RunArgs []string
	// EnvFromSecret, if set, names a Secret whose keys become environment
	// variables in every pod, for ${env:NAME} references.
	EnvFromSecret string
	// Deadline bounds each Job's run (activeDeadlineSeconds).
	Deadline time.Duration
}

func (s *Spec) check() error {
	if s.Name == "" || len(s.Name) > 40 || strings.Trim(s.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("name %q: lower-case letters, digits and '-', at most 40 characters", s.Name)
	}
	if s.Workers < 1 || (s.HostNetwork && s.Workers > 256) {
		return fmt.Errorf("%d workers: give 1 or more (at most 256 with host network)", s.Workers)
	}
	if s.Image == "" {
		return fmt.Errorf("no image: build one with 'make image' and give its name")
	}
	if _, ok := s.Files["workload.yaml"]; !ok {
		return fmt.Errorf("no workload file")
	}
	return nil
}

// Objects is one run's Kubernetes objects, in the order they are created.
type Objects struct {
	ConfigMap   *kubeapi.ConfigMap
	Service     *kubeapi.Service
	Workers     *kubeapi.Job
	Coordinator *kubeapi.Job
}

func (s *Spec) labels(role string) map[string]string {
	l := map[string]string{LabelName: "brokerbench", LabelRun: s.Name}
	if role != "" {
		l[LabelRole] = role
	}
	return l
}

func (s *Spec) meta(name, role string) kubeapi.ObjectMeta {
	return kubeapi.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: s.labels(role)}
}

// WorkerURLs are the worker API's addresses as the coordinator reaches
// them: through the headless Service's DNS names, or on loopback with
// host network.
func (s *Spec) WorkerURLs() []string {
	var urls []string
	for i := range s.Workers {
		if s.HostNetwork {
			urls = append(urls, fmt.Sprintf("http://127.1.%d.1:%d", i, WorkerPort))
		} else {
			urls = append(urls, fmt.Sprintf("http://%s-workers-%d.%s-workers.%s.svc:%d", s.Name, i, s.Name, s.Namespace, WorkerPort))
		}
	}
	return urls
}

// Build returns the run's objects.
func Build(s Spec) (*Objects, error) {
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	if s.PullPolicy == "" {
		s.PullPolicy = "IfNotPresent"
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	files := map[string]string{"workers": strings.Join(s.WorkerURLs(), "\n") + "\n"}
	for k, v := range s.Files {
		files[k] = v
	}
	o := &Objects{
		ConfigMap: &kubeapi.ConfigMap{TypeMeta: kubeapi.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: s.meta(s.Name+"-config", ""), Data: files},
		Service: &kubeapi.Service{
			TypeMeta: kubeapi.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: s.meta(s.Name+"-workers", "worker"),
			Spec: kubeapi.ServiceSpec{
				ClusterIP: "None", Selector: s.labels("worker"), PublishNotReadyAddresses: true,
				Ports: []kubeapi.ServicePort{{Name: "worker-api", Port: WorkerPort, TargetPort: WorkerPort}},
			},
		},
	}
	listen := fmt.Sprintf("0.0.0.0:%d", WorkerPort)
	if s.HostNetwork {
		// Kubernetes expands $(VAR) from the container's environment,
		// where the Job controller puts the completion index.
		listen = fmt.Sprintf("127.1.$(JOB_COMPLETION_INDEX).1:%d", WorkerPort)
	}
	workers := int32(s.Workers)
	o.Workers = s.job(s.Name+"-workers", "worker", []string{"worker", "--listen", listen, "--once"})
	o.Workers.Spec.CompletionMode, o.Workers.Spec.Completions, o.Workers.Spec.Parallelism = "Indexed", &workers, &workers
	o.Workers.Spec.Template.Spec.Subdomain = s.Name + "-workers"
	if !s.HostNetwork {
		// On the host network a container port is a host port, which the
		// scheduler allows once per node: the workers there each serve
		// on an address of their own instead.
		o.Workers.Spec.Template.Spec.Containers[0].Ports = []kubeapi.ContainerPort{{Name: "worker-api", ContainerPort: WorkerPort}}
	}
	args := append([]string{"k8s", "coordinator", "--", "run", configDir + "/workload.yaml", "--workers-file", configDir + "/workers",
		"--workers-wait", "5m", "--quiet", "--no-history"}, s.RunArgs...)
	if _, ok := s.Files["driver.yaml"]; ok {
		args = append(args, "--driver", configDir+"/driver.yaml")
	}
	o.Coordinator = s.job(s.Name+"-coordinator", "coordinator", args)
	return o, nil
}

// job returns a Job of one container running brokerbench with args.
func (s *Spec) job(name, role string, args []string) *kubeapi.Job {
	var noRetry int32
	deadline := int64(s.Deadline.Seconds())
	if deadline <= 0 {
		deadline = 3600
	}
	nonRoot, uid := true, int64(65532)
	c := kubeapi.Container{
		Name: role, Image: s.Image, ImagePullPolicy: s.PullPolicy, Args: args,
		Env: []kubeapi.EnvVar{{Name: "HOME", Value: "/tmp"}},
		VolumeMounts: []kubeapi.VolumeMount{
			{Name: "config", MountPath: configDir, ReadOnly: true},
			{Name: "scratch", MountPath: "/tmp"},
		},
		Resources:       kubeapi.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "memory": "64Mi"}},
		SecurityContext: &kubeapi.SecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &uid, AllowPrivilegeEscalation: new(bool)},
	}
	if s.EnvFromSecret != "" {
		c.EnvFrom = []kubeapi.EnvFromSource{{SecretRef: &kubeapi.LocalObjectReference{Name: s.EnvFromSecret}}}
	}
	var tolerations []kubeapi.Toleration
	if s.HostNetwork {
		// Pods on the host network need no pod network: they may run on
		// a node whose network plugin is not ready (or absent).
		for _, taint := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/network-unavailable"} {
			tolerations = append(tolerations, kubeapi.Toleration{Key: taint, Operator: "Exists", Effect: "NoSchedule"})
		}
	}
	return &kubeapi.Job{
		TypeMeta: kubeapi.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: s.meta(name, role),
		Spec: kubeapi.JobSpec{
			BackoffLimit: &noRetry, ActiveDeadlineSeconds: &deadline,
			Template: kubeapi.PodTemplateSpec{
				ObjectMeta: kubeapi.ObjectMeta{Labels: s.labels(role)},
				Spec: kubeapi.PodSpec{
					RestartPolicy: "Never", HostNetwork: s.HostNetwork, Tolerations: tolerations,
					Containers: []kubeapi.Container{c},
					Volumes: []kubeapi.Volume{
						{Name: "config", ConfigMap: &kubeapi.LocalObjectReference{Name: s.Name + "-config"}},
						{Name: "scratch", EmptyDir: &kubeapi.EmptyDirVolumeSource{}},
					},
				},
			},
		},
	}
}

// YAML renders the objects as one multi-document YAML stream, for
// 'kubectl apply -f'.
func (o *Objects) YAML() ([]byte, error) {
	var docs []string
	for _, obj := range []any{o.ConfigMap, o.Service, o.Workers, o.Coordinator} {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(y))
	}
	return []byte(strings.Join(docs, "---\n")), nil
}
