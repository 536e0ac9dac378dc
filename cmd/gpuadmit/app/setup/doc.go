// Package setup is the webhook setup a command decides with: the
// configuration and the policies, from --config and --policy or from the
// gpuadmit ConfigMaps of the cluster, and the line on stderr saying which.
package setup
