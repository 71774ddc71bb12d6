#!/bin/sh
# gen_man.sh DCPI OUTDIR - man pages for dcpi and every command, made from
# the commands' own --help (so a page says what the binary does: one source
# of truth) and the command table's one-line descriptions (`dcpi --help`).
# Each command gets dcpi-NAME.1; one with a DCPI name (dcpicalc ...) gets it
# as NAME.1 too, and dcpi.1 lists them all.  `make install` installs them.
# The prose of a page (DESCRIPTION, OUTPUT: the output line by line,
# EXAMPLES, FILES, SEE ALSO) is docs/man/NAME.txt: a line in capitals starts
# a section, lines indented by two spaces are shown as typed.
set -eu
DCPI=$1
OUT=$2
TEXT=$(dirname "$0")/../docs/man
mkdir -p "$OUT"
day=$(date -u +%Y-%m-%d)

# roff-escape a text block: backslashes, and lines starting with . or '
esc() {
	sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

# docs/man/NAME.txt as roff: its DESCRIPTION section (only=DESCRIPTION) or
# every other section (only=rest)
prose() {
	awk -v only="$2" '
	function flush_pre() { if (pre) { print ".fi"; pre = 0 } }
	function esc(t) { gsub(/\\/, "\\e", t); if (t ~ /^[.'"'"']/) t = "\\&" t; return t }
	/^[A-Z][A-Z ]*$/ {
		flush_pre()
		keep = (only == "DESCRIPTION") == ($0 == "DESCRIPTION")
		if (keep) print ".SH " $0
		next
	}
	!keep { next }
	/^  / { if (!pre) { print ".nf"; pre = 1 } print esc($0); next }
	{ flush_pre(); print esc($0) }
	END { flush_pre() }' "$1"
}

"$DCPI" --help 2>&1 | sed -n 's/^  \([a-z][a-z-]*\)  *\(dcpi[a-z]*\)\{0,1\}  *\(.*\)$/\1|\2|\3/p' \
	> "$OUT/.commands"

{
	printf '.TH DCPI 1 "%s" "dcpi" "dcpi manual"\n' "$day"
	printf '.SH NAME\ndcpi \\- continuous profiling and profile analysis for Linux/x86-64\n'
	printf '.SH SYNOPSIS\n.B dcpi\n.I command\n.RI [ options ]\n'
	printf '.SH DESCRIPTION\n'
	printf 'dcpi re-creates the DIGITAL Continuous Profiling Infrastructure: a collector\n'
	printf 'of program-counter, path and value samples into a profile database, and the\n'
	printf 'analysis that turns them into executions, CPI, stall culprits and compiler\n'
	printf 'feedback.  Every command is one binary; the DCPI names are links to it.\n'
	printf 'The database is \\fB\\-\\-db\\fR DIR, else \\fB$DCPIDB\\fR, else ./dcpidb.\n'
	printf '.SH COMMANDS\n'
	while IFS='|' read -r name alias help; do
		printf '.TP\n.BR dcpi\\-%s (1)\n' "$name"
		[ -n "$alias" ] && printf '(also \\fB%s\\fR) ' "$alias"
		printf '%s\n' "$help" | esc
	done < "$OUT/.commands"
	printf '.SH EXAMPLES\n.nf\n'
	printf 'dcpi record \\-\\- ./prog args      # sample a run into ./dcpidb\n'
	printf 'dcpiprof                          # where the samples are\n'
	printf 'dcpicalc hot_loop                 # executions, CPI, stalls of one procedure\n'
	printf 'dcpilist hot_loop                 # the same by source line\n'
	printf 'dcpicfg hot_loop \\-\\-format svg \\-o g.svg  # its control-flow graph\n'
	printf '.fi\n.SH FILES\n'
	printf 'The profile database: ./dcpidb (or \\fB$DCPIDB\\fR, or \\fB\\-\\-db\\fR DIR).\n'
	printf '.SH SEE ALSO\nThe README of the source tree; docs/ for formats and methods.\n'
} > "$OUT/dcpi.1"

while IFS='|' read -r name alias help; do
	page=$OUT/dcpi-$name.1
	usage=$("$DCPI" "$name" --help 2>&1 | head -1 | sed 's/^usage: //')
	upper=$(echo "dcpi-$name" | tr 'a-z-' 'A-Z-')
	{
		printf '.TH %s 1 "%s" "dcpi" "dcpi manual"\n' "$upper" "$day"
		printf '.SH NAME\n%s \\- ' "${alias:-dcpi-$name}"
		printf '%s\n' "$help" | esc
		printf '.SH SYNOPSIS\n.nf\n'
		printf '%s\n' "$usage" | esc
		[ -n "$alias" ] && printf 'dcpi %s ...\n' "$name"
		printf '.fi\n'
		if [ -f "$TEXT/$name.txt" ]; then
			prose "$TEXT/$name.txt" DESCRIPTION
		else
			printf '.SH DESCRIPTION\n'
			printf '%s\n' "$help" | esc
		fi
		printf '.SH OPTIONS\n.nf\n'
		"$DCPI" "$name" --help 2>&1 | sed 1d | esc
		printf '.fi\n'
		if [ -f "$TEXT/$name.txt" ]; then
			prose "$TEXT/$name.txt" rest
		else
			printf '.SH EXAMPLES\n.nf\ndcpi %s \\-\\-help\n.fi\n' "$name"
			printf '.SH SEE ALSO\n.BR dcpi (1)\n'
		fi
	} > "$page"
	[ -n "$alias" ] && cp "$page" "$OUT/$alias.1"
done < "$OUT/.commands"
rm -f "$OUT/.commands"
