package replicas

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuadmit/gpuadmit/internal/cluster/tcpproxy"
)

// Pause stops replica i (SIGSTOP: as a long garbage-collection pause or a
// stopped VM would) until Continue; nothing of it runs meanwhile, its
// connections stay open.
func (c *Cluster) Pause(i int) error { return c.replicaSignal(i, syscall.SIGSTOP) }

// Continue resumes a paused replica (SIGCONT).
func (c *Cluster) Continue(i int) error { return c.replicaSignal(i, syscall.SIGCONT) }

func (c *Cluster) replicaSignal(i int, sig syscall.Signal) error {
	r := c.Replicas[i]
	if r.cmd == nil {
		return fmt.Errorf("%s is not running", r.Name)
	}
	return r.cmd.Process.Signal(sig)
}

// APIProxy is the proxy between replica i and the API server
// (Options.APIProxies), to stall or cut its connection alone.
func (c *Cluster) APIProxy(i int) *tcpproxy.Proxy { return c.Replicas[i].api }

// apiProxies gives each replica its own kubeconfig, through its own proxy
// to the API server.
func (c *Cluster) apiProxies() error {
	host, err := url.Parse(c.Config.Host)
	if err != nil {
		return err
	}
	for _, r := range c.Replicas {
		if r.api, err = tcpproxy.New(tcpproxy.Options{Listen: "127.0.0.1:0", Backends: []tcpproxy.Backend{{Addr: host.Host}}}); err != nil {
			return err
		}
		kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
		if err != nil {
			return fmt.Errorf("reading the kubeconfig: %w", err)
		}
		for _, cl := range kc.Clusters {
			cl.Server = "https://" + net.JoinHostPort("127.0.0.1", portOf(r.api.Addr()))
		}
		r.kubeconfig = filepath.Join(c.opts.Dir, r.Name+".kubeconfig")
		if err := clientcmd.WriteToFile(*kc, r.kubeconfig); err != nil {
			return fmt.Errorf("writing %s: %w", r.kubeconfig, err)
		}
	}
	return nil
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
