// Command cloud-controller-manager is Google's stock GCE cloud-controller-manager, built from the
// published Go modules (k8s.io/cloud-provider's controller manager with the GCE provider of
// k8s.io/cloud-provider-gcp/providers) so that dccm's tests can run the real thing against the GCE
// emulator. Only this entry point is ours: it wires the provider into the library's command, as
// every out-of-tree provider does; the controllers and the GCE code are unchanged.
package main

import (
	"os"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	// Registers the "gce" provider (--cloud-provider=gce).
	_ "k8s.io/cloud-provider-gcp/providers/gce"
)

func main() {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("cloud-controller-manager options: %v", err)
	}
	stop := make(chan struct{}) // never closed: the process ends by signal, like the stock binary
	cmd := app.NewCloudControllerManagerCommand(opts, newCloud, app.DefaultInitFuncConstructors,
		names.CCMControllerAliases(), cliflag.NamedFlagSets{}, stop)
	os.Exit(cli.Run(cmd))
}

// newCloud builds the provider named by --cloud-provider from --cloud-config.
func newCloud(c *cloudcontrollerconfig.CompletedConfig) cloudprovider.Interface {
	shared := c.ComponentConfig.KubeCloudShared
	cloud, err := cloudprovider.InitCloudProvider(shared.CloudProvider.Name, shared.CloudProvider.CloudConfigFile)
	if err != nil {
		klog.Fatalf("cloud provider %q: %v", shared.CloudProvider.Name, err)
	}
	if cloud == nil {
		klog.Fatalf("cloud provider %q is not registered (only \"gce\" is built in)", shared.CloudProvider.Name)
	}
	if !cloud.HasClusterID() && !shared.AllowUntaggedCloud {
		klog.Fatalf("cloud provider %q has no cluster ID and --allow-untagged-cloud is not set", shared.CloudProvider.Name)
	}
	return cloud
}
