// The Kubeflow Trainer v2 controller manager for the nvcre test bed.
//
// It runs upstream's controllers and admission webhooks unchanged (the same
// packages cmd/trainer-controller-manager wires up). Only the wiring differs,
// because upstream's main cannot be confined to loopback: its webhook server
// binds every interface, and its certificate rotator reads a fixed
// /tmp/k8s-webhook-server path and wants an RSA CA with cluster DNS names. Here
// the webhook server binds --webhook-host with a certificate the test bed
// issues into --webhook-cert-dir, and the test bed registers the webhook
// configurations (URL clientConfig, its own CA bundle).
package main

import (
	"crypto/tls"
	"flag"
	"os"

	"go.uber.org/zap/zapcore"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlpkg "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/config"
	"github.com/kubeflow/trainer/v2/pkg/controller"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

func main() {
	var metricsAddr, probeAddr, webhookHost, certDir string
	var webhookPort int
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "metrics address (plain HTTP); 0 disables")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "healthz/readyz address")
	flag.StringVar(&webhookHost, "webhook-host", "127.0.0.1", "address the webhook server binds")
	flag.IntVar(&webhookPort, "webhook-server-port", 9443, "webhook server port")
	flag.StringVar(&certDir, "webhook-cert-dir", "", "directory holding tls.crt and tls.key for the webhook server")
	opts := zap.Options{TimeEncoder: zapcore.RFC3339NanoTimeEncoder}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	if certDir == "" {
		log.Info("--webhook-cert-dir is required")
		os.Exit(2)
	}

	scheme := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(trainer.AddToScheme(scheme))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(scheme))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(scheme))
	utilruntime.Must(volcanov1beta1.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))

	// The runtimes read upstream's Configuration (defaults only here: no config file,
	// no status server). Its serving options are not used: the manager below keeps
	// every listener on the loopback addresses the test bed chose.
	_, cfg, err := config.Load(scheme, "")
	if err != nil {
		log.Error(err, "unable to load the default configuration")
		os.Exit(1)
	}
	restCfg := ctrl.GetConfigOrDie()
	config.ApplyClientConnection(restCfg, &cfg)

	http1Only := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         false,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: webhookHost, Port: webhookPort, CertDir: certDir,
			TLSOpts: []func(*tls.Config){http1Only},
		}),
	})
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	runtimes, err := runtimecore.New(ctx, mgr.GetClient(), mgr.GetFieldIndexer(), &cfg)
	if err != nil {
		log.Error(err, "could not initialize runtimes")
		os.Exit(1)
	}
	if name, err := controller.SetupControllers(mgr, runtimes, ctrlpkg.Options{}); err != nil {
		log.Error(err, "could not create controller", "controller", name)
		os.Exit(1)
	}
	if name, err := webhooks.Setup(mgr, runtimes); err != nil {
		log.Error(err, "could not create webhook", "webhook", name)
		os.Exit(1)
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()))
	log.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
