// Package nodeagent keeps the gpuadmit.io/gpu-devices annotation of one Node
// equal to the GPU devices discovered on that node. It patches the Node (a
// JSON merge patch of that one annotation) only when the value changed, so
// an unchanged node costs one metadata GET per refresh and no write.
//
// Discovery and the API server are behind two small interfaces defined here,
// DeviceSource and NodePatcher; KubeNodes implements NodePatcher with
// client-go's metadata client.
package nodeagent
