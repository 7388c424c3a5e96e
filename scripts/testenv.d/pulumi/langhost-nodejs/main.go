// Command pulumi-language-nodejs is a minimal Node.js language host for the offline test
// environment of dccm.
//
// Why it exists: the upstream host (module github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3)
// is not served by the Go module proxy these machines can reach, and nothing else can be
// downloaded. The engine only needs a small part of the LanguageRuntime service to run a program:
//
//   - Run: start `node <@pulumi/pulumi>/cmd/run <flags> <entry point>` in the program directory,
//     exactly the contract of @pulumi/pulumi's cmd/run script (flags + PULUMI_CONFIG* variables);
//   - GetPluginInfo: report the pinned version.
//
// Every other method answers Unimplemented, which the engine treats as "older language host"
// (no Handshake, no required-plugin discovery, no dependency installation). Programs run through
// the Automation API with an inline program do not use a language host at all (runtime "client").
//
// Runtime options honoured (Pulumi.yaml runtime.options): typescript (default true), tsconfig,
// nodeargs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// Exit code with which @pulumi/pulumi's cmd/run reports "error already shown to the user".
const exitCodeBail = 32

func main() {
	flags := flag.NewFlagSet("pulumi-language-nodejs", flag.ContinueOnError)
	showVersion := flags.Bool("version", false, "print the version and exit")
	tracing := flags.String("tracing", "", "Zipkin-compatible tracing endpoint, passed on to the program")
	_ = flags.Bool("logtostderr", false, "accepted for compatibility; ignored")
	_ = flags.Int("v", 0, "accepted for compatibility; ignored")
	_ = flags.String("root", "", "accepted for compatibility; ignored")
	if err := flags.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println(version.Version)
		return
	}

	// The engine passes its own address as the last positional argument.
	var engineAddress string
	if args := flags.Args(); len(args) > 0 {
		engineAddress = args[len(args)-1]
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		fatalf("could not find node on the $PATH: %v", err)
	}

	host := &nodeHost{engineAddress: engineAddress, nodeBin: nodeBin, tracing: *tracing}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		fatalf("could not start language host RPC server: %v", err)
	}
	// The engine reads the port from our first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fatalf("language host RPC server stopped: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: "+format+"\n", args...)
	os.Exit(1)
}

type nodeHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	engineAddress string
	nodeBin       string
	tracing       string
}

func (h *nodeHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: strings.TrimPrefix(version.Version, "v")}, nil
}

func (h *nodeHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	runScript, err := findRunScript(programDir)
	if err != nil {
		return nil, err
	}
	opts := info.GetOptions()

	args := strings.Fields(stringOption(opts, "nodeargs", ""))
	args = append(args, runScript)
	add := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name+"="+value)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", h.engineAddress)
	add("organization", req.GetOrganization())
	add("project", req.GetProject())
	add("stack", req.GetStack())
	add("root-directory", info.GetRootDirectory())
	add("pwd", req.GetPwd())
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("tracing", h.tracing)
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	entryPoint := req.GetProgram()
	if entryPoint == "" {
		entryPoint = "."
	}
	args = append(args, entryPoint)
	args = append(args, req.GetArgs()...)

	configJSON, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("serializing config: %w", err)
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("serializing secret config keys: %w", err)
	}
	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
		"PULUMI_NODEJS_TYPESCRIPT="+strconv.FormatBool(boolOption(opts, "typescript", true)),
	)
	if tsconfig := stringOption(opts, "tsconfig", ""); tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+tsconfig)
	}

	cmd := exec.CommandContext(ctx, h.nodeBin, args...)
	cmd.Dir = programDir
	cmd.Env = env
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == exitCodeBail {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run node: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// findRunScript looks for node_modules/@pulumi/pulumi/cmd/run from dir upwards.
func findRunScript(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving program directory %q: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "node_modules", "@pulumi", "pulumi", "cmd", "run")
		if _, err := os.Stat(filepath.Join(candidate, "index.js")); err == nil {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("@pulumi/pulumi is not installed for the program in %s "+
		"(no node_modules/@pulumi/pulumi/cmd/run in it or its parents): run npm install", abs)
}

func stringOption(opts *structpb.Struct, name, fallback string) string {
	if v, ok := opts.GetFields()[name]; ok {
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			return s.StringValue
		}
	}
	return fallback
}

func boolOption(opts *structpb.Struct, name string, fallback bool) bool {
	if v, ok := opts.GetFields()[name]; ok {
		switch k := v.GetKind().(type) {
		case *structpb.Value_BoolValue:
			return k.BoolValue
		case *structpb.Value_StringValue:
			if b, err := strconv.ParseBool(k.StringValue); err == nil {
				return b
			}
		}
	}
	return fallback
}
