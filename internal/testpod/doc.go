// Package testpod builds Pod objects for tests with a small fluent API:
//
//	testpod.New("p").NS("a").
//		Init("i", testpod.GPU(1), testpod.Mem(20480)).
//		App("c", testpod.GPU(1), testpod.Mem(10240)).
//		Node("n1").Devices("GPU-a,NVIDIA,20480,0:;GPU-a,NVIDIA,10240,0:;").
//		InitTerminated("i", 0).AppRunning("c").
//		Build()
//
// Resource options use HAMi's default resource names; Request turns options
// into requests instead of limits. Status helpers set the
// container statuses the kubelet would report; the pod phase defaults to
// Pending and becomes Running once an app container runs (Phase overrides).
package testpod
