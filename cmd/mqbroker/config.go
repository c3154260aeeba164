package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/logging"
	"github.com/ringmq/ringmq/internal/version"
)

// errVersion ends the command after --version (exit status 0).
var errVersion = errors.New("mqbroker: version printed")

// loaded is a configuration ready to start, with the logger built from its logging keys.
type loaded struct {
	cfg       broker.Config
	file      string // the -c file, "" none: UPDATE_BROKER_CONFIG keeps its changes there
	logger    *slog.Logger
	logCloser io.Closer
	printOnly bool // -p
}

// pending is a warning found while reading the configuration, logged once the logger exists (the
// logging keys are part of what is read).
type pending struct {
	level slog.Level
	msg   string
	args  []any
}

// configure builds the configuration from defaults, the -c file and the flags, validates it as a
// start does (Config.Validate: the same checks for -p and a start), and builds the logger. A bad
// value is an error naming where it was set (file and line, or the flag), the key, the value and
// the allowed values.
func configure(args []string, stdout, stderr io.Writer) (loaded, error) {
	cfg := broker.DefaultConfig()
	fs := pflag.NewFlagSet("mqbroker", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	configFile := fs.StringP("configFile", "c", "", "broker config file (Java properties, broker.conf keys)")
	printConfig := fs.BoolP("printConfigItem", "p", false, "validate the configuration as a start does, print it and exit")
	showVersion := fs.Bool("version", false, "print the version, git commit and Go version and exit")
	command := []string{"configFile", "printConfigItem", "version"}
	// One flag per config key, applied after the file. Kept as text and parsed by
	// Config.Set, so that flags and file accept exactly the same values. The usage comes
	// from the key's tags (meaning, unit, allowed values); pflag adds the default.
	keyFlags := map[string]*string{}
	for _, key := range broker.PropertyNames() {
		def, _ := cfg.Get(key)
		if key == "brokerName" {
			def = "" // the host name: its help says so, and --help reads the same on every host
		}
		short := ""
		if key == "namesrvAddr" {
			short = "n"
		}
		v := &keyValue{text: def, kind: broker.PropertyKind(key)}
		keyFlags[key] = &v.text
		usage := broker.PropertyUsage(key)
		if def != "" {
			// Said here rather than by pflag, which leaves out zero defaults (0, false).
			usage += " (default " + def + ")"
		}
		fs.VarP(v, key, short, usage)
		fs.Lookup(key).DefValue = ""
		if v.kind == "bool" {
			fs.Lookup(key).NoOptDefVal = "true" // --key alone means true; --key=false works
		}
	}
	// The RocketMQ keys ringmq accepts without reading are flags too, hidden from --help, so that
	// a flag is treated as the same line of the file would be (Config.Set: a warning naming it).
	acceptedKeys := broker.AcceptedRocketMQKeys()
	for _, key := range acceptedKeys {
		v := &keyValue{kind: "text"}
		keyFlags[key] = &v.text
		fs.Var(v, key, "an Apache RocketMQ key ringmq accepts without reading")
		_ = fs.MarkHidden(key)
	}
	fs.Usage = func() { printUsage(stderr, fs, command) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return loaded{}, err
		}
		if flag, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if s := broker.SuggestKey(flag); s != "" {
				return loaded{}, fmt.Errorf("%w: %w (did you mean --%s?)", errUsage, err, s)
			}
		}
		return loaded{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	if *showVersion {
		version.Print(stdout, "mqbroker")
		return loaded{}, errVersion
	}
	if fs.NArg() > 0 {
		return loaded{}, fmt.Errorf("%w: unexpected arguments: %v", errUsage, fs.Args())
	}

	// origin says where each key's value was set, for errors found once every key is read.
	origin := map[string]string{}
	var warnings []pending
	var errs []error
	if *configFile != "" {
		props, err := conf.ReadFile(*configFile)
		if err != nil {
			return loaded{}, fmt.Errorf("mqbroker: config file: %w", err)
		}
		reported := map[string]bool{}
		for _, p := range props {
			where := *configFile + ":" + strconv.Itoa(p.Line)
			w, err := cfg.Set(p.Key, p.Value, p.Line)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			if w == nil {
				origin[p.Key] = where
				if alias, ok := broker.LegacyAliases[p.Key]; ok {
					origin[alias] = where
				}
			} else if !reported[w.Key] {
				reported[w.Key] = true
				warnings = append(warnings, keyWarning(w, "file", *configFile, "line", w.Line))
			}
		}
	}
	for _, key := range append(broker.PropertyNames(), acceptedKeys...) {
		if !fs.Changed(key) {
			continue
		}
		where := "flag --" + key
		w, err := cfg.Set(key, *keyFlags[key], 0)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		case w != nil:
			warnings = append(warnings, keyWarning(w, "flag", "--"+key))
		}
		origin[key] = where
	}
	if len(errs) == 0 {
		if cfg.AclFile == "" {
			// DESIGN.md: plain_acl.yml beside the file given to -c, else conf/plain_acl.yml.
			if *configFile != "" {
				cfg.AclFile = filepath.Join(filepath.Dir(*configFile), "plain_acl.yml")
			} else {
				cfg.AclFile = filepath.FromSlash(broker.DefaultAclFile)
			}
		}
		if err := cfg.Validate(); err != nil {
			where := "default value"
			var ve *conf.ValueError
			if errors.As(err, &ve) && origin[ve.Key] != "" {
				where = origin[ve.Key]
			}
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	logger, closer, err := logging.New(cfg.LogSettings, stderr)
	if err != nil || len(errs) > 0 {
		// Say what was found on stderr, then stop: the configuration does not start.
		fallback := slog.New(slog.NewTextHandler(stderr, nil))
		for _, w := range warnings {
			fallback.Log(context.Background(), w.level, w.msg, w.args...)
		}
		if closer != nil {
			_ = closer.Close()
		}
		return loaded{}, errors.Join(errs...)
	}
	for _, w := range warnings {
		logger.Log(context.Background(), w.level, w.msg, w.args...)
	}
	if *configFile != "" {
		logger.Info("config file loaded", "file", *configFile)
	}
	return loaded{cfg: cfg, file: *configFile, logger: logger, logCloser: closer, printOnly: *printConfig}, nil
}

// keyWarning is the log line for a RocketMQ key ringmq accepts without reading it: a warning for
// one it ignores (the operator may expect its effect), an info line saying what ringmq does
// instead for one it does not need. where names the file and line, or the flag.
func keyWarning(w *broker.ConfigWarning, where ...any) pending {
	if w.Ignored {
		return pending{slog.LevelWarn, "RocketMQ config key ignored", append(append([]any{"key", w.Key}, where...), "why", w.Message)}
	}
	return pending{slog.LevelInfo, "config key accepted but not needed", append(append([]any{"key", w.Key}, where...), "instead", w.Message)}
}

// usageHeader opens --help; the key sections follow, one per broker.KeyGroups entry.
const usageHeader = `Usage: mqbroker [-c broker.conf] [-n "ns1:9876;ns2:9876"] [--<key>=<value> ...] [-p]

Runs a ringmq broker (RocketMQ-compatible), by default with an embedded name server. Every
broker.conf key is also a flag; flags win over the file, the file over the defaults.
Durations are whole numbers in the unit shown; -p validates and prints the configuration.
`

// printUsage writes --help: the command's own flags, then the keys grouped by section (network,
// store, flush, ...), each with its meaning, unit, allowed values and default.
func printUsage(w io.Writer, fs *pflag.FlagSet, command []string) {
	section := func(title string, names []string) {
		set := pflag.NewFlagSet(title, pflag.ContinueOnError)
		set.SortFlags = false
		for _, n := range names {
			set.AddFlag(fs.Lookup(n))
		}
		fmt.Fprintf(w, "\n%s:\n%s", title, set.FlagUsagesWrapped(0))
	}
	fmt.Fprint(w, usageHeader)
	section("Command", command)
	byGroup := map[string][]string{}
	for _, key := range broker.PropertyNames() {
		g := broker.PropertyGroup(key)
		byGroup[g] = append(byGroup[g], key)
	}
	for _, g := range broker.KeyGroups {
		section("Keys: "+g, byGroup[g])
	}
}

// keyValue is a key's flag: the text as given, parsed later by Config.Set like a file's value.
// Its type names what the key takes in --help (int, ms, hours, bool, enum, text).
type keyValue struct {
	text string
	kind string
}

func (v *keyValue) String() string     { return v.text }
func (v *keyValue) Set(s string) error { v.text = s; return nil }
func (v *keyValue) Type() string       { return v.kind }
