package discovery

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestDriverPodCacheTrimmed: the driver pods' informer keeps what
// discovery and pod logs read of a pod, as the executor pods' does
// (trimPod), not whole pods: any user may create pods labelled
// spark-role=driver in their namespace, each up to the API server's 1.5 MB
// (annotations, env, extra labels, status), even ones never scheduled; a
// few hundred of them would fill the gateway's 256 MiB.
func TestDriverPodCacheTrimmed(t *testing.T) {
	t.Parallel()
	k, err := newKubeSource(KubernetesSource{APIServer: "http://127.0.0.1:1", Namespaces: []string{"a"}, SparkApplications: "off"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := driverPod("a", "big", "spark-1", 4040, corev1.PodRunning, "10.0.0.7")
	big.Annotations = map[string]string{"junk": strings.Repeat("x", 256<<10)}
	for i := range 200 {
		big.Labels[fmt.Sprintf("junk-%d", i)] = strings.Repeat("y", 63)
	}
	big.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "JUNK", Value: strings.Repeat("z", 256<<10)}}
	big.Spec.Containers[0].Command = []string{strings.Repeat("c", 256<<10)}
	big.Status.Conditions = []corev1.PodCondition{{Message: strings.Repeat("m", 256<<10)}}
	fakeKube(t, k, big)
	got := make(chan pushed, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.run(ctx, func(p pushed) { got <- p }); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case p := <-got:
		if p.c.key() != "http://10.0.0.7:4040" || p.c.appID != "spark-1" {
			t.Fatalf("push = %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing pushed")
	}
	k.mu.Lock()
	objs := k.pods[0].GetStore().List()
	k.mu.Unlock()
	p := objs[0].(*corev1.Pod)
	size := len(p.Annotations["junk"]) + len(p.Labels)*64 + len(p.Status.Conditions)
	for _, c := range p.Spec.Containers {
		size += len(c.Env) + len(c.Command)
	}
	if p.Annotations != nil || len(p.Labels) > 3 || len(p.Status.Conditions) > 0 || size > 1024 {
		t.Errorf("the driver pods' cache holds the whole pod (%d annotations, %d labels, %d conditions, env and command kept): "+
			"a user's pods labelled spark-role=driver fill the gateway's memory", len(p.Annotations), len(p.Labels), len(p.Status.Conditions))
	}
	if c, ok := podCandidate(p); !ok || c.key() != "http://10.0.0.7:4040" || c.appID != "spark-1" || c.source != "kubernetes:a/big" {
		t.Errorf("the trimmed pod is candidate %+v %v", c, ok)
	}
}
