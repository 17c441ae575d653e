// Command crossplane runs Crossplane core (`core init`, `core start`) from
// github.com/crossplane/crossplane/v2, which replaces its apis module with a
// local path and so cannot be installed directly. Only the core commands are
// wired: the local fleet needs neither the RBAC manager nor `render`.
package main

import (
	"io"
	"os"

	"github.com/alecthomas/kong"
	admv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/crossplane/crossplane/apis/v2"
	"github.com/crossplane/crossplane/v2/cmd/crossplane/core"
)

type command struct {
	Core core.Command `cmd:"" help:"Crossplane core: init, then start the controllers."`
}

func main() {
	debug := os.Getenv("CROSSPLANE_DEBUG") != ""
	zl := zap.New(zap.UseDevMode(debug)).WithName("crossplane")
	logging.SetFilteredKlogLogger(zl)
	// controller-runtime's own log is very chatty; keep it for debugging only.
	if debug {
		ctrl.SetLogger(zl)
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}

	// The manager's scheme must hold every kind a package may carry.
	s := runtime.NewScheme()
	c := &command{}
	ctx := kong.Parse(c,
		kong.Name("crossplane"),
		kong.BindTo(logging.NewLogrLogger(zl), (*logging.Logger)(nil)),
		kong.UsageOnError(),
		core.KongVars,
	)
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, authv1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme,
		coordinationv1.AddToScheme, extv1.AddToScheme, extv1beta1.AddToScheme,
		admv1.AddToScheme, apis.AddToScheme,
	} {
		ctx.FatalIfErrorf(add(s))
	}
	ctx.FatalIfErrorf(ctx.Run(s))
}
