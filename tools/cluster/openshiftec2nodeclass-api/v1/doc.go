// Package v1 holds the OpenshiftEC2NodeClass v1 schema this project serves in a hosted cluster's guest.
// It is input to controller-gen only (no clients, no deep copies): fetch-crds.sh renders the CRD from it.
// +groupName=karpenter.hypershift.openshift.io
package v1
