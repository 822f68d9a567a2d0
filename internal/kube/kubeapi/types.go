package kubeapi

// The Kubernetes API objects brokerbench creates and reads, with only the
// fields it sets or reads. Their JSON is the API's: the API server
// decodes what is sent with strict field validation, so a field named
// wrongly here is an error, not a silent omission. A field left out here
// is one brokerbench neither sets nor reads.

// TypeMeta is an object's apiVersion and kind.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ObjectMeta is an object's metadata.
type ObjectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// DeletionTimestamp is set (RFC 3339) once the object is being
	// deleted; read only.
	DeletionTimestamp string `json:"deletionTimestamp,omitempty"`
}

// ConfigMap holds files for pods to mount.
type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
}

// Service gives pods a stable name; brokerbench's is headless.
type Service struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ServiceSpec `json:"spec"`
}

// ServiceSpec is what a Service selects and serves.
type ServiceSpec struct {
	// ClusterIP "None" makes the Service headless: its DNS names are the
	// pods' own addresses.
	ClusterIP                string            `json:"clusterIP,omitempty"`
	Selector                 map[string]string `json:"selector,omitempty"`
	PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses,omitempty"`
	Ports                    []ServicePort     `json:"ports,omitempty"`
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name       string `json:"name,omitempty"`
	Port       int32  `json:"port"`
	TargetPort int32  `json:"targetPort,omitempty"`
}

// Job runs pods to completion.
type Job struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       JobSpec `json:"spec"`
}

// JobSpec is how a Job runs its pods.
type JobSpec struct {
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit          *int32 `json:"backoffLimit,omitempty"`
	// CompletionMode "Indexed" gives each pod its index
	// (JOB_COMPLETION_INDEX) and a stable host name.
	CompletionMode string          `json:"completionMode,omitempty"`
	Completions    *int32          `json:"completions,omitempty"`
	Parallelism    *int32          `json:"parallelism,omitempty"`
	Template       PodTemplateSpec `json:"template"`
}

// PodTemplateSpec is the pods a Job makes.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata"`
	Spec       PodSpec `json:"spec"`
}

// PodSpec is a pod's containers and where they run.
type PodSpec struct {
	Containers    []Container  `json:"containers"`
	HostNetwork   bool         `json:"hostNetwork,omitempty"`
	RestartPolicy string       `json:"restartPolicy,omitempty"`
	Subdomain     string       `json:"subdomain,omitempty"`
	Tolerations   []Toleration `json:"tolerations,omitempty"`
	Volumes       []Volume     `json:"volumes,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image,omitempty"`
	ImagePullPolicy string               `json:"imagePullPolicy,omitempty"`
	Args            []string             `json:"args,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	EnvFrom         []EnvFromSource      `json:"envFrom,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitzero"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// EnvFromSource makes every key of a Secret an environment variable.
type EnvFromSource struct {
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// ContainerPort is a port a container serves on.
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
}

// ResourceRequirements are a container's resource requests, as
// quantities ("100m", "64Mi").
type ResourceRequirements struct {
	Requests map[string]string `json:"requests,omitempty"`
}

// SecurityContext is who a container runs as.
type SecurityContext struct {
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation,omitempty"`
	RunAsNonRoot             *bool  `json:"runAsNonRoot,omitempty"`
	RunAsUser                *int64 `json:"runAsUser,omitempty"`
}

// Toleration lets a pod run on a node with a taint.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Volume is a volume of a pod: a ConfigMap's files or an empty directory.
type Volume struct {
	Name      string                `json:"name"`
	ConfigMap *LocalObjectReference `json:"configMap,omitempty"`
	EmptyDir  *EmptyDirVolumeSource `json:"emptyDir,omitempty"`
}

// EmptyDirVolumeSource is a directory that lives as long as its pod.
type EmptyDirVolumeSource struct{}

// VolumeMount is where a container sees a volume.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// Pod is a pod as read back: its labels and status.
type Pod struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Status     PodStatus `json:"status"`
}

// Pod phases.
const (
	PodPending   = "Pending"
	PodRunning   = "Running"
	PodSucceeded = "Succeeded"
	PodFailed    = "Failed"
)

// PodStatus is where a pod is in its life.
type PodStatus struct {
	Phase             string            `json:"phase,omitempty"`
	Conditions        []PodCondition    `json:"conditions,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
}

// PodCondition is one condition of a pod ("PodScheduled", "Ready"...).
type PodCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStatus is one container's state.
type ContainerStatus struct {
	Name  string         `json:"name"`
	Image string         `json:"image,omitempty"`
	State ContainerState `json:"state,omitzero"`
}

// ContainerState is a container's state: at most one field is set.
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// ContainerStateWaiting is why a container has not started.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateTerminated is how a container ended.
type ContainerStateTerminated struct {
	ExitCode int32  `json:"exitCode"`
	Reason   string `json:"reason,omitempty"`
}

// List is a list of objects of one kind as the API server returns it
// (PodList, JobList...).
type List[T any] struct {
	TypeMeta `json:",inline"`
	Items    []T `json:"items"`
}

// DeleteOptions are how an object is deleted.
type DeleteOptions struct {
	// GracePeriodSeconds is how long a pod's containers get to stop
	// after SIGTERM (nil: the pod's own setting).
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// PropagationPolicy is "Background" to have the objects a deleted
	// one owns (a Job's pods) deleted after it, "Foreground" before it,
	// "Orphan" to keep them.
	PropagationPolicy string `json:"propagationPolicy,omitempty"`
}
