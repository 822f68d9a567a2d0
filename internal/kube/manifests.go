// Package kube runs a distributed brokerbench run on Kubernetes: workers
// as an Indexed Job behind a headless Service, the coordinator as a Job
// that runs the test and exits, their files in a ConfigMap. It builds
// those objects, creates them through the API server (client-go), follows
// them, copies the results out of the coordinator's log, and deletes what
// it created.
package kube

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
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
	// PullPolicy is the containers' image pull policy (default
	// IfNotPresent).
	PullPolicy corev1.PullPolicy
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
	ConfigMap   *corev1.ConfigMap
	Service     *corev1.Service
	Workers     *batchv1.Job
	Coordinator *batchv1.Job
}

func (s *Spec) labels(role string) map[string]string {
	l := map[string]string{LabelName: "brokerbench", LabelRun: s.Name}
	if role != "" {
		l[LabelRole] = role
	}
	return l
}

func (s *Spec) meta(name, role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: s.labels(role)}
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
		s.PullPolicy = corev1.PullIfNotPresent
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	files := map[string]string{"workers": strings.Join(s.WorkerURLs(), "\n") + "\n"}
	for k, v := range s.Files {
		files[k] = v
	}
	o := &Objects{
		ConfigMap: &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: s.meta(s.Name+"-config", ""), Data: files},
		Service: &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: s.meta(s.Name+"-workers", "worker"),
			Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone, Selector: s.labels("worker"), PublishNotReadyAddresses: true,
				Ports: []corev1.ServicePort{{Name: "worker-api", Port: WorkerPort, TargetPort: intstr.FromInt32(WorkerPort)}},
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
	indexed := batchv1.IndexedCompletion
	o.Workers = s.job(s.Name+"-workers", "worker", []string{"worker", "--listen", listen, "--once"})
	o.Workers.Spec.CompletionMode, o.Workers.Spec.Completions, o.Workers.Spec.Parallelism = &indexed, &workers, &workers
	o.Workers.Spec.Template.Spec.Subdomain = s.Name + "-workers"
	if !s.HostNetwork {
		// On the host network a container port is a host port, which the
		// scheduler allows once per node: the workers there each serve
		// on an address of their own instead.
		o.Workers.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "worker-api", ContainerPort: WorkerPort}}
	}
	args := append([]string{"k8s", "coordinator", "--", "run", configDir + "/workload.yaml", "--workers-file", configDir + "/workers",
		"--workers-wait", "5m", "--quiet"}, s.RunArgs...)
	if _, ok := s.Files["driver.yaml"]; ok {
		args = append(args, "--driver", configDir+"/driver.yaml")
	}
	o.Coordinator = s.job(s.Name+"-coordinator", "coordinator", args)
	return o, nil
}

// job returns a Job of one container running brokerbench with args.
func (s *Spec) job(name, role string, args []string) *batchv1.Job {
	var noRetry int32
	deadline := int64(s.Deadline.Seconds())
	if deadline <= 0 {
		deadline = 3600
	}
	nonRoot, uid := true, int64(65532)
	c := corev1.Container{
		Name: role, Image: s.Image, ImagePullPolicy: s.PullPolicy, Args: args,
		Env: []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: configDir, ReadOnly: true},
			{Name: "scratch", MountPath: "/tmp"},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &uid, AllowPrivilegeEscalation: new(bool)},
	}
	if s.EnvFromSecret != "" {
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.EnvFromSecret}}}}
	}
	var tolerations []corev1.Toleration
	if s.HostNetwork {
		// Pods on the host network need no pod network: they may run on
		// a node whose network plugin is not ready (or absent).
		for _, taint := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/network-unavailable"} {
			tolerations = append(tolerations, corev1.Toleration{Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: s.meta(name, role),
		Spec: batchv1.JobSpec{
			BackoffLimit: &noRetry, ActiveDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: s.labels(role)},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, HostNetwork: s.HostNetwork, Tolerations: tolerations,
					Containers: []corev1.Container{c},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.Name + "-config"}}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
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
