package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/sysinfo"
)

var updateCLIDoc = flag.Bool("update-cli-doc", false, "rewrite docs/cli.md from the command tree")

// cliDocPath is the command-line reference, from this package's directory.
var cliDocPath = filepath.Join("..", "..", "docs", "cli.md")

// TestCLIReferenceIsCurrent checks that docs/cli.md is what the command
// tree gives: a command, flag or help text changed without the reference
// fails here, with the command that rewrites it.
func TestCLIReferenceIsCurrent(t *testing.T) {
	got := cliReference(t)
	if *updateCLIDoc {
		if err := os.WriteFile(cliDocPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatalf("%v: run `make docs` (go test ./internal/cli -run TestCLIReferenceIsCurrent -update-cli-doc)", err)
	}
	if string(want) != got {
		t.Fatalf("docs/cli.md is not the reference the command tree gives (%s): run `make docs` (go test ./internal/cli -run TestCLIReferenceIsCurrent -update-cli-doc)",
			firstDifference(string(want), got))
	}
}

// cliReference renders the reference from the command tree, the same on
// every machine: a development build's version (the image flags' default
// tag) and a fixed home directory (defaults under the user's cache).
func cliReference(t *testing.T) string {
	t.Helper()
	version := sysinfo.Version
	sysinfo.Version = "dev"
	t.Cleanup(func() { sysinfo.Version = version })
	t.Setenv("HOME", "/home/user")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")

	root := newRoot(IO{Out: io.Discard, Err: io.Discard})
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, s := range documented(c) {
			walk(s)
		}
	}
	walk(root)

	var b strings.Builder
	b.WriteString(`# Command-line reference

<!-- Generated from the command tree: edit the commands' help in internal/cli, then run make docs. -->

Every command, subcommand and flag of brokerbench, as its help prints them.
This file is generated from the command tree by ` + "`make docs`" + `
(` + "`go test ./internal/cli -run TestCLIReferenceIsCurrent -update-cli-doc`" + `),
and ` + "`make test`" + ` fails when it is out of date. Defaults that depend on the
build are shown as a development build gives them (version ` + "`dev`" + `).

Every command also takes ` + "`-h, --help`" + `; ` + "`brokerbench --version`" + ` prints what
` + "`brokerbench version`" + ` prints. cobra adds ` + "`brokerbench help [command]`" + ` and
` + "`brokerbench completion bash|zsh|fish|powershell`" + ` (shell completion scripts).

`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s- [%s](#%s): %s\n", strings.Repeat("  ", depth(c)), c.CommandPath(), anchor(c), c.Short)
	}
	b.WriteString("\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "## %s\n\n", c.CommandPath())
		if c.Long != "" {
			b.WriteString(strings.TrimSpace(c.Long) + "\n\n")
		} else {
			b.WriteString(c.Short + "\n\n")
		}
		if c.Runnable() {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		}
		if subs := documented(c); len(subs) > 0 {
			b.WriteString("Commands:\n\n")
			for _, s := range subs {
				fmt.Fprintf(&b, "- [%s](#%s): %s\n", s.Name(), anchor(s), s.Short)
			}
			b.WriteString("\n")
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
		}
		if f := c.NonInheritedFlags().FlagUsages(); f != "" {
			fmt.Fprintf(&b, "Flags:\n\n```\n%s```\n\n", f)
		}
		if f := c.InheritedFlags().FlagUsages(); f != "" {
			fmt.Fprintf(&b, "Flags of the parent commands:\n\n```\n%s```\n\n", f)
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// documented is c's subcommands the reference holds, by name: hidden
// ones are left out, as the help leaves them out.
func documented(c *cobra.Command) []*cobra.Command {
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() && !s.IsAdditionalHelpTopicCommand() {
			subs = append(subs, s)
		}
	}
	slices.SortFunc(subs, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
	return subs
}

func depth(c *cobra.Command) int {
	n := 0
	for p := c.Parent(); p != nil; p = p.Parent() {
		n++
	}
	return n
}

// anchor is the link target GitHub gives a command's heading.
func anchor(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// firstDifference says where two texts first differ, by line.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d is %q, the command tree gives %q", i+1, wl, gl)
		}
	}
	return "they differ"
}
