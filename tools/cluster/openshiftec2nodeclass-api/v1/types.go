package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The schema below follows HyperShift's OpenshiftEC2NodeClass v1 field by field (names, enums, bounds and
// CEL rules are the API's); the descriptions are this project's. Enum values are PascalCase: the sidecar maps
// them onto Karpenter's EC2NodeClass values.

// OpenshiftEC2NodeClass is a hosted cluster's description of the EC2 instances Karpenter launches for it.
// The HyperShift sidecar translates each into the EC2NodeClass of the same name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=openshiftec2nodeclasses,scope=Cluster,shortName=oec2nc;oec2ncs
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
type OpenshiftEC2NodeClass struct {
	metav1.TypeMeta `json:",inline"`
	// metadata: the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec: how instances for this NodeClass are launched.
	// +required
	Spec OpenshiftEC2NodeClassSpec `json:"spec"`

	// status: what the translation resolved and its conditions.
	// +optional
	Status OpenshiftEC2NodeClassStatus `json:"status,omitempty"`
}

// OpenshiftEC2NodeClassList is a list of OpenshiftEC2NodeClasses.
// +kubebuilder:object:root=true
type OpenshiftEC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OpenshiftEC2NodeClass `json:"items"`
}

// OpenshiftEC2NodeClassSpec is the launch configuration. Every field is optional; an empty spec is refused.
// +kubebuilder:validation:MinProperties=1
type OpenshiftEC2NodeClassSpec struct {
	// subnetSelectorTerms picks the subnets instances launch into; a subnet matching any term is used.
	// When unset the hosted cluster's private subnets are used.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:message="subnetSelectorTerms, when set, has a term",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="each subnetSelectorTerms term sets tags or id",rule="self.all(x, has(x.tags) || has(x.id))"
	// +kubebuilder:validation:XValidation:message="a subnetSelectorTerms term with id sets nothing else",rule="!self.all(x, has(x.id) && has(x.tags))"
	// +listType=atomic
	// +optional
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms,omitempty"`

	// securityGroupSelectorTerms picks the security groups instances get; a group matching any term is used.
	// When unset the hosted cluster's discovery-tagged groups are used.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:message="securityGroupSelectorTerms, when set, has a term",rule="self.size() != 0"
	// +kubebuilder:validation:XValidation:message="each securityGroupSelectorTerms term sets tags, id or name",rule="self.all(x, has(x.tags) || has(x.id) || has(x.name))"
	// +kubebuilder:validation:XValidation:message="a securityGroupSelectorTerms term with id sets nothing else",rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))"
	// +kubebuilder:validation:XValidation:message="a securityGroupSelectorTerms term with name sets nothing else",rule="!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))"
	// +listType=atomic
	// +optional
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms,omitempty"`

	// capacityReservationSelectorTerms picks the EC2 capacity reservations Karpenter may launch into; a
	// reservation matching any term is used. A term sets tags, id, ownerID or instanceMatchCriteria; id
	// stands alone.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:message="each capacityReservationSelectorTerms term sets tags, id, ownerID or instanceMatchCriteria",rule="self.all(x, has(x.tags) || has(x.id) || has(x.ownerID) || has(x.instanceMatchCriteria))"
	// +kubebuilder:validation:XValidation:message="a capacityReservationSelectorTerms term with id sets nothing else",rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))"
	// +listType=atomic
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`

	// ipAddressAssociation: Public gives instances a public IP address; SubnetDefault leaves it to the
	// subnet's setting. When unset the subnet decides.
	// +optional
	IPAddressAssociation IPAddressAssociation `json:"ipAddressAssociation,omitempty"`

	// tags are added to the EC2 resources launched for this NodeClass (instances, volumes, launch templates).
	// Keys Karpenter and Kubernetes reserve are refused.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:XValidation:message="a tag key is empty",rule="self.all(k, k != '')"
	// +kubebuilder:validation:XValidation:message="tag key eks:eks-cluster-name is reserved",rule="self.all(k, k !='eks:eks-cluster-name')"
	// +kubebuilder:validation:XValidation:message="tag keys starting kubernetes.io/cluster are reserved for Kubernetes",rule="self.all(k, !k.startsWith('kubernetes.io/cluster') )"
	// +kubebuilder:validation:XValidation:message="tag key karpenter.sh/nodepool is reserved for Karpenter",rule="self.all(k, k != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="tag key karpenter.sh/nodeclaim is reserved for Karpenter",rule="self.all(k, k !='karpenter.sh/nodeclaim')"
	// +kubebuilder:validation:XValidation:message="tag key karpenter.k8s.aws/ec2nodeclass is reserved for Karpenter",rule="self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// blockDeviceMappings are the volumes attached at launch; at most one is the kubelet's root volume.
	// When unset a 120 GiB encrypted gp3 root volume is used.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:message="at most one of blockDeviceMappings is the RootVolume",rule="self.filter(x, has(x.rootVolume)?x.rootVolume=='RootVolume':false).size() <= 1"
	// +listType=atomic
	// +optional
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`

	// instanceStorePolicy: RAID0 joins the instance's NVMe instance-store disks into one array used for the
	// kubelet's and the container runtime's state.
	// +optional
	InstanceStorePolicy InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`

	// monitoring: Detailed turns on CloudWatch detailed monitoring of instances, Basic keeps the basic one.
	// When unset EC2's default (basic) applies.
	// +optional
	Monitoring MonitoringState `json:"monitoring,omitempty"`

	// metadataOptions sets how instances expose the EC2 instance metadata service. When unset the platform
	// default applies (endpoint on, IPv4, hop limit 1, tokens required).
	// +optional
	MetadataOptions MetadataOptions `json:"metadataOptions,omitempty"`

	// version is the OpenShift release (x.y.z) the nodes run; when unset they run the control plane's.
	// HyperShift's ignition generator resolves it and reports condition VersionResolved.
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|[1-9]\\\\d*)\\\\.(0|[1-9]\\\\d*)\\\\.(0|[1-9]\\\\d*)(?:-((?:0|[1-9]\\\\d*|\\\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\\\.(?:0|[1-9]\\\\d*|\\\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\\\+([0-9a-zA-Z-]+(?:\\\\.[0-9a-zA-Z-]+)*))?$')",message="version is a semantic version such as 4.20.1"
	// +optional
	Version string `json:"version,omitempty"`

	// kubelet settings for the nodes of this NodeClass.
	// +optional
	Kubelet KubeletConfiguration `json:"kubelet,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by id (not both); its fields must all match.
// +kubebuilder:validation:MinProperties=1
type SubnetSelectorTerm struct {
	// tags to match ('*' as a value: the key is present with any value).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="a tag key or value is empty",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the subnet (subnet-...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^subnet-[0-9a-z]+$')",message="id is a subnet ID (subnet- and lowercase letters or digits)"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name (id and name stand alone).
// +kubebuilder:validation:MinProperties=1
type SecurityGroupSelectorTerm struct {
	// tags to match ('*' as a value: the key is present with any value).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="a tag key or value is empty",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the security group (sg-...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^sg-[0-9a-z]+$')",message="id is a security group ID (sg- and lowercase letters or digits)"
	// +optional
	ID string `json:"id,omitempty"`
	// name of the security group (its EC2 group name, not its Name tag).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations; its fields must all match.
// +kubebuilder:validation:MinProperties=1
type CapacityReservationSelectorTerm struct {
	// tags to match ('*' as a value: the key is present with any value).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="a tag key or value is empty",rule="self.all(k, k != '' && self[k] != '')"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the reservation (cr-...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^cr-[0-9a-z]+$')",message="id is a capacity reservation ID (cr- and lowercase letters or digits)"
	// +optional
	ID string `json:"id,omitempty"`
	// ownerID: the 12-digit AWS account that owns the reservation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=12
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{12}$')",message="ownerID is an AWS account ID (12 digits)"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// instanceMatchCriteria: Open (any matching instance uses it) or Targeted (only instances naming it).
	// When unset both kinds are selected.
	// +optional
	InstanceMatchCriteria InstanceMatchCriteria `json:"instanceMatchCriteria,omitempty"`
}

// BlockDeviceMapping is one volume attached at launch.
// +kubebuilder:validation:MinProperties=1
type BlockDeviceMapping struct {
	// deviceName, e.g. /dev/xvda.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	DeviceName string `json:"deviceName,omitempty"`
	// ebs: the EBS volume behind the device; it names a snapshot, a size, or both.
	// +kubebuilder:validation:XValidation:message="ebs sets snapshotID, volumeSizeGiB or both",rule="has(self.snapshotID) || has(self.volumeSizeGiB)"
	// +optional
	EBS BlockDevice `json:"ebs,omitempty"`
	// rootVolume: RootVolume when this device holds the kubelet's root directory.
	// +optional
	RootVolume RootVolumeDesignation `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume's settings.
// +kubebuilder:validation:MinProperties=1
type BlockDevice struct {
	// deleteOnTermination: Delete (the volume goes with the instance) or Retain.
	// +optional
	DeleteOnTermination DeleteOnTerminationPolicy `json:"deleteOnTermination,omitempty"`
	// encrypted: Encrypted or Unencrypted (a volume from a snapshot takes the snapshot's).
	// +optional
	Encrypted EncryptionState `json:"encrypted,omitempty"`
	// iops provisioned (gp3, io1, io2 only).
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// kmsKeyID: ARN of the KMS key that encrypts the volume.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	KMSKeyID string `json:"kmsKeyID,omitempty"`
	// snapshotID the volume is created from.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	SnapshotID string `json:"snapshotID,omitempty"`
	// throughput in MiB/s (gp3 only, 125 to 1000).
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// volumeSizeGiB: the volume's size in GiB.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +optional
	VolumeSizeGiB int64 `json:"volumeSizeGiB,omitempty"`
	// volumeType of the EBS volume.
	// +optional
	VolumeType VolumeType `json:"volumeType,omitempty"`
}

// MetadataOptions: how the instance metadata service is reachable from a node.
// +kubebuilder:validation:MinProperties=1
type MetadataOptions struct {
	// access: HTTPEndpoint (reachable) or None (off).
	// +optional
	Access MetadataAccess `json:"access,omitempty"`
	// httpIPProtocol: IPv4 or IPv6 endpoint.
	// +optional
	HTTPIPProtocol MetadataHTTPProtocol `json:"httpIPProtocol,omitempty"`
	// httpPutResponseHopLimit: how many network hops a PUT response travels (1: the instance only; 2: pods too).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit int64 `json:"httpPutResponseHopLimit,omitempty"`
	// httpTokens: Required (IMDSv2 only) or Optional (IMDSv1 too).
	// +optional
	HTTPTokens MetadataHTTPTokensState `json:"httpTokens,omitempty"`
}

// EvictionThreshold is a percentage ("10%") or a quantity ("100Mi").
// +kubebuilder:validation:MaxLength=64
type EvictionThreshold string

// KubeletConfiguration: kubelet settings. The fields below are validated; other kubelet configuration keys
// are kept as given (unvalidated) for HyperShift's ignition generator to pass on to the node.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent) || self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent",message="imageGCHighThresholdPercent is above imageGCLowThresholdPercent"
// +kubebuilder:validation:XValidation:rule="!has(self.podsPerCore) || !has(self.maxPods) || self.podsPerCore <= self.maxPods",message="podsPerCore is at most maxPods"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionSoft) || (has(self.evictionSoftGracePeriod) && self.evictionSoft.all(e, e in self.evictionSoftGracePeriod))",message="every evictionSoft signal needs an evictionSoftGracePeriod entry"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionSoftGracePeriod) || (has(self.evictionSoft) && self.evictionSoftGracePeriod.all(e, e in self.evictionSoft))",message="every evictionSoftGracePeriod entry needs an evictionSoft signal"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionHard) || !has(self.evictionSoft) || self.evictionHard.all(key, !(key in self.evictionSoft) || ((self.evictionSoft[key].endsWith('%') && self.evictionHard[key].endsWith('%')) ? (self.evictionSoft[key].size() <= 1 || self.evictionHard[key].size() <= 1 || double(self.evictionSoft[key].substring(0, self.evictionSoft[key].size() - 1)) >= double(self.evictionHard[key].substring(0, self.evictionHard[key].size() - 1))) : (!(isQuantity(self.evictionSoft[key]) && isQuantity(self.evictionHard[key])) || quantity(self.evictionSoft[key]).compareTo(quantity(self.evictionHard[key])) >= 0)))",message="for a signal in both, the evictionSoft threshold is at least the evictionHard one, so soft eviction comes first"
type KubeletConfiguration struct {
	// maxPods on a node (1 to 2500).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2500
	// +optional
	MaxPods int32 `json:"maxPods,omitempty"`
	// podsPerCore: pods per CPU core (1 to 2500, at most maxPods).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2500
	// +optional
	PodsPerCore int32 `json:"podsPerCore,omitempty"`
	// systemReserved: cpu, memory, ephemeral-storage and pid held back for the system.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="systemReserved keys are cpu, memory, ephemeral-storage or pid",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="a systemReserved quantity is negative",rule="self.all(x, !self[x].startsWith('-'))"
	// +kubebuilder:validation:XValidation:message="a systemReserved quantity is empty",rule="self.all(x, self[x].size() > 0)"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// kubeReserved: cpu, memory, ephemeral-storage and pid held back for Kubernetes' own components.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="kubeReserved keys are cpu, memory, ephemeral-storage or pid",rule="self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"
	// +kubebuilder:validation:XValidation:message="a kubeReserved quantity is negative",rule="self.all(x, !self[x].startsWith('-'))"
	// +kubebuilder:validation:XValidation:message="a kubeReserved quantity is empty",rule="self.all(x, self[x].size() > 0)"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// evictionHard: per signal, the threshold at which pods are evicted at once.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="evictionHard signals are memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +kubebuilder:validation:XValidation:message="an evictionHard threshold is empty",rule="self.all(x, self[x].size() > 0)"
	// +optional
	EvictionHard map[string]EvictionThreshold `json:"evictionHard,omitempty"`
	// evictionSoft: per signal, the threshold at which pods are evicted after its grace period.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="evictionSoft signals are memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +kubebuilder:validation:XValidation:message="an evictionSoft threshold is empty",rule="self.all(x, self[x].size() > 0)"
	// +optional
	EvictionSoft map[string]EvictionThreshold `json:"evictionSoft,omitempty"`
	// evictionSoftGracePeriod: per soft-eviction signal, how long it must hold (a duration, e.g. 1m30s).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="evictionSoftGracePeriod signals are memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available",rule="self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])"
	// +optional
	EvictionSoftGracePeriod map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	// evictionMaxPodGracePeriod: the longest grace period, in seconds, a pod gets on a soft eviction.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// imageGCHighThresholdPercent: disk usage (0 to 100) that starts image garbage collection.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// imageGCLowThresholdPercent: disk usage (0 to 100) image garbage collection brings it down to.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// cpuCFSQuota: enforce CPU limits with CFS quota.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// OpenshiftEC2NodeClassStatus: what was resolved for the NodeClass, and its conditions.
// +kubebuilder:validation:MinProperties=1
type OpenshiftEC2NodeClassStatus struct {
	// conditions: Ready, Karpenter's EC2NodeClass conditions, and those of HyperShift's ignition generator.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// subnets the subnet selector resolved to.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// securityGroups the security group selector resolved to.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// capacityReservations the capacity reservation selector resolved to.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// releaseImage the nodes run (from spec.version, or the control plane's), by digest.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	ReleaseImage string `json:"releaseImage,omitempty"`
	// version of releaseImage.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// id of the subnet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	ID string `json:"id"`
	// zone: its availability zone.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	Zone string `json:"zone"`
	// zoneID: its availability zone's ID.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// id of the security group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	ID string `json:"id"`
	// name of the security group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// availabilityZone it is in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// endTime: when it expires (Karpenter stops launching into it then).
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// id of the reservation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	ID string `json:"id"`
	// instanceMatchCriteria: which launches it accepts.
	// +required
	InstanceMatchCriteria InstanceMatchCriteria `json:"instanceMatchCriteria"`
	// instanceType it reserves.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	InstanceType string `json:"instanceType"`
	// ownerID: the AWS account that owns it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=12
	// +required
	OwnerID string `json:"ownerID"`
	// reservationType: Default or CapacityBlock.
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// state: Active or Expiring.
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
}

// IPAddressAssociation: whether instances get a public IP address.
// +kubebuilder:validation:Enum=Public;SubnetDefault
type IPAddressAssociation string

// MonitoringState: CloudWatch monitoring level.
// +kubebuilder:validation:Enum=Detailed;Basic
type MonitoringState string

// RootVolumeDesignation: whether a device holds the kubelet's root directory.
// +kubebuilder:validation:Enum=RootVolume;NotRootVolume
type RootVolumeDesignation string

// DeleteOnTerminationPolicy: what happens to a volume when its instance terminates.
// +kubebuilder:validation:Enum=Delete;Retain
type DeleteOnTerminationPolicy string

// EncryptionState of an EBS volume.
// +kubebuilder:validation:Enum=Encrypted;Unencrypted
type EncryptionState string

// VolumeType of an EBS volume.
// +kubebuilder:validation:Enum=Standard;IO1;IO2;GP2;SC1;ST1;GP3
type VolumeType string

// InstanceStorePolicy: what is done with instance-store disks.
// +kubebuilder:validation:Enum=RAID0
type InstanceStorePolicy string

// InstanceMatchCriteria: which launches a capacity reservation accepts.
// +kubebuilder:validation:Enum=Open;Targeted
type InstanceMatchCriteria string

// CapacityReservationType: an on-demand reservation or a capacity block.
// +kubebuilder:validation:Enum=Default;CapacityBlock
type CapacityReservationType string

// CapacityReservationState of a capacity reservation.
// +kubebuilder:validation:Enum=Active;Expiring
type CapacityReservationState string

// MetadataAccess: whether the instance metadata endpoint is reachable.
// +kubebuilder:validation:Enum=HTTPEndpoint;None
type MetadataAccess string

// MetadataHTTPProtocol: the metadata endpoint's IP protocol.
// +kubebuilder:validation:Enum=IPv4;IPv6
type MetadataHTTPProtocol string

// MetadataHTTPTokensState: whether metadata requests need a session token.
// +kubebuilder:validation:Enum=Required;Optional
type MetadataHTTPTokensState string
