{{- define "brokerbench.labels" -}}
app.kubernetes.io/name: brokerbench
brokerbench.io/run: {{ .Release.Name }}
{{- end }}

{{- define "brokerbench.job" -}}
backoffLimit: 0
activeDeadlineSeconds: {{ .root.Values.activeDeadlineSeconds }}
template:
  metadata:
    labels:
      {{- include "brokerbench.labels" .root | nindent 6 }}
      brokerbench.io/role: {{ .role }}
  spec:
    restartPolicy: Never
    hostNetwork: {{ .root.Values.hostNetwork }}
    {{- if .root.Values.hostNetwork }}
    tolerations:
    - key: node.kubernetes.io/not-ready
      operator: Exists
      effect: NoSchedule
    - key: node.kubernetes.io/network-unavailable
      operator: Exists
      effect: NoSchedule
    {{- end }}
    {{- if eq .role "worker" }}
    subdomain: {{ .root.Release.Name }}-workers
    {{- end }}
    containers:
    - name: {{ .role }}
      image: "{{ .root.Values.image.repository }}:{{ .root.Values.image.tag }}"
      imagePullPolicy: {{ .root.Values.image.pullPolicy }}
      args:
      {{- toYaml .args | nindent 6 }}
      env:
      - name: HOME
        value: /tmp
      {{- if .root.Values.envFromSecret }}
      envFrom:
      - secretRef:
          name: {{ .root.Values.envFromSecret }}
      {{- end }}
      {{- if and (eq .role "worker") (not .root.Values.hostNetwork) }}
      ports:
      - name: worker-api
        containerPort: 7070
      {{- end }}
      resources:
        requests:
          cpu: 100m
          memory: 64Mi
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        allowPrivilegeEscalation: false
      volumeMounts:
      - name: config
        mountPath: /etc/brokerbench
        readOnly: true
      - name: scratch
        mountPath: /tmp
    volumes:
    - name: config
      configMap:
        name: {{ .root.Release.Name }}-config
    - name: scratch
      emptyDir: {}
{{- end }}
