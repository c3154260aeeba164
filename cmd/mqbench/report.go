package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/perf"
)

// runReport is `mqbench report DIR... --html FILE --md FILE`.
func runReport(args []string, stdout, stderr io.Writer) error {
	fset := pflag.NewFlagSet("mqbench report", pflag.ContinueOnError)
	fset.SetOutput(stderr)
	htmlPath := fset.String("html", "", "write the HTML report (inline SVG, no network assets) to FILE")
	mdPath := fset.String("md", "", "write the Markdown table to FILE (without --html and --md: to stdout)")
	title := fset.String("title", "mqbench report", "report title")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mqbench report DIR... --html FILE --md FILE\n\n"+
			"DIR is a run directory, a run.json, or a directory searched for run directories (a suite's results).\n"+
			"Runs sharing a name (the rounds of a suite) are summarized by their medians, and the charts\n"+
			"draw the median-throughput run of each. Ratios are against the first run (or name).\n\n%s", fset.FlagUsages())
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fset.NArg() == 0 {
		return fmt.Errorf("%w: report needs at least one run directory", errUsage)
	}
	paths, err := findRuns(fset.Args())
	if err != nil {
		return err
	}
	runs, err := perf.LoadAll(paths)
	if err != nil {
		return err
	}
	return writeReports(runs, *title, *htmlPath, *mdPath, nil, stdout)
}

// findRuns expands the arguments into run.json paths: a run directory or file as is, any
// other directory searched (sorted) for run directories.
func findRuns(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		if _, err := os.Stat(filepath.Join(a, "run.json")); err == nil {
			out = append(out, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == "run.json" {
				found = append(found, filepath.Dir(p))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("no run.json under %s", a)
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// writeReports writes the HTML and Markdown reports (Markdown to stdout when neither
// file is named). Repeated names are summarized by medians.
func writeReports(runs []*perf.Run, title, htmlPath, mdPath string, notes []string, stdout io.Writer) error {
	groups := perf.GroupByName(runs)
	rows := perf.Summaries(runs)
	drawn := runs
	opts := perf.HTMLOptions{Title: title, Notes: notes}
	if len(groups) < len(runs) {
		rows = perf.Medians(groups)
		drawn = make([]*perf.Run, len(groups))
		for i, g := range groups {
			drawn[i] = g.Representative()
		}
		opts.Rows = rows
		opts.RowsCaption = "Medians over the runs of each configuration; the charts draw each configuration's median-throughput run."
	}
	if htmlPath != "" {
		if err := writeFile(htmlPath, func(w io.Writer) error { return perf.WriteHTML(w, drawn, opts) }); err != nil {
			return err
		}
	}
	if mdPath != "" {
		if err := writeFile(mdPath, func(w io.Writer) error { return perf.WriteMarkdown(w, rows) }); err != nil {
			return err
		}
	}
	if htmlPath == "" && mdPath == "" {
		return perf.WriteMarkdown(stdout, rows)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
