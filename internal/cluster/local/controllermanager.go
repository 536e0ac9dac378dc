package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControllerManagerControllers are the controllers kube-controller-manager
// runs (Config.ControllerManager): those that turn workloads into pods and
// the garbage collector that deletes a workload's ReplicaSets, Jobs and
// pods with it.
const ControllerManagerControllers = "deployment-controller,replicaset-controller,statefulset-controller," +
	"job-controller,cronjob-controller,garbage-collector-controller"

// ControllerManagerUser is the user kube-controller-manager connects as:
// the API server's bootstrap RBAC lets it create its controllers'
// ServiceAccounts and their tokens in kube-system, as in a real cluster.
const ControllerManagerUser = "system:kube-controller-manager"

// controllerManager is a running kube-controller-manager process.
type controllerManager struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startControllerManager runs kube-controller-manager from c.Assets
// against the API server: ControllerManagerControllers only, no leader
// election, no serving port, every controller with its own ServiceAccount's
// credentials (--use-service-account-credentials: a ReplicaSet's pods are
// created by system:serviceaccount:kube-system:replicaset-controller), and
// its log in the cluster's directory. It returns once the controllers act:
// a Deployment made a ReplicaSet.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	bin := filepath.Join(c.Assets, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("kube-controller-manager is not in %s (`make envtest-bins` builds it): %w", c.Assets, err)
	}
	kubeconfig := filepath.Join(c.dir, "kube-controller-manager.kubeconfig")
	if err := writeUserKubeconfig(c.env, envtest.User{Name: ControllerManagerUser}, kubeconfig); err != nil {
		return err
	}
	logPath := filepath.Join(c.dir, "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("kube-controller-manager's log: %w", err)
	}
	cmd := exec.Command(bin, //nolint:gosec // the binary built from source into the assets directory
		"--kubeconfig="+kubeconfig,
		"--controllers="+ControllerManagerControllers,
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--secure-port=0",
		"--feature-gates=GenericWorkload=true",
		"--v=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	km := &controllerManager{cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { km.done <- cmd.Wait(); _ = logFile.Close() }()
	c.kcm = km
	if err := c.awaitControllers(ctx); err != nil {
		return fmt.Errorf("kube-controller-manager not acting (its log: %s): %w", c.ControllerManagerLog(20), err)
	}
	return nil
}

// awaitControllers creates a Deployment of no pods in the webhook's own
// namespace (which no webhook sees) and waits until the Deployment
// controller made its ReplicaSet, then deletes it.
func (c *Cluster) awaitControllers(ctx context.Context) error {
	labels := map[string]string{"app": "controller-manager-probe"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "controller-manager-probe", Namespace: Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.example/probe:1"}}}}}}
	deployments := c.Kube.AppsV1().Deployments(Namespace)
	if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the probe Deployment: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-c.kcm.done:
			c.kcm.done <- err
			return false, fmt.Errorf("kube-controller-manager exited: %w", err)
		default:
		}
		rs, err := c.Kube.AppsV1().ReplicaSets(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=controller-manager-probe"})
		return err == nil && len(rs.Items) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the probe Deployment's ReplicaSet: %w", err)
	}
	if err := deployments.Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting the probe Deployment: %w", err)
	}
	return nil
}

// stopControllerManager stops kube-controller-manager (SIGTERM, then
// SIGKILL after 10 s) and waits for it to exit.
func (c *Cluster) stopControllerManager() error {
	if c.kcm == nil {
		return nil
	}
	km := c.kcm
	c.kcm = nil
	if err := km.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping kube-controller-manager: %w", err)
	}
	var exit error
	select {
	case exit = <-km.done:
	case <-time.After(10 * time.Second):
		_ = km.cmd.Process.Kill()
		exit = <-km.done
	}
	// An exit status (the signal's) is how it stops; anything else is not.
	if ee := (*exec.ExitError)(nil); exit != nil && !errors.As(exit, &ee) {
		return fmt.Errorf("waiting for kube-controller-manager: %w", exit)
	}
	return nil
}

// ControllerManagerLog is the last lines of kube-controller-manager's log
// ("" when it does not run), for a failing test to show.
func (c *Cluster) ControllerManagerLog(lines int) string {
	if c.kcm == nil {
		return ""
	}
	data, err := os.ReadFile(c.kcm.log)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", c.kcm.log, err)
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// writeUserKubeconfig adds user to env and writes a kubeconfig for it to
// path.
func writeUserKubeconfig(env *envtest.Environment, user envtest.User, path string) error {
	u, err := env.AddUser(user, nil)
	if err != nil {
		return fmt.Errorf("adding the user %s: %w", user.Name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig of %s: %w", user.Name, err)
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
