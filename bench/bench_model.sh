#!/bin/sh
# bench_model.sh - the pipeline model's steady-state cycles per iteration
# against loops timed on this project's Zen 5 machines and against
# llvm-mca-19 -mcpu=znver5 on the same bytes (the "measured" column is the
# per-instruction figure timed here, DESIGN.md "The machines"); median and 90th-percentile
# relative difference from the measured figures for both, and time per loop.
: "${BUILD:=build}"
DCPI="${DCPI_BIN:-$(pwd)/$BUILD/dcpi}"
MCA="${MCA:-llvm-mca-19}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name | measured cycles/iteration on Zen 5 | loop body (AT&T, ';'-separated)
cat >"$tmp/loops" <<'LOOPS'
add_chain|1|add %rax,%rax
imul_chain|3|imul %rax,%rax
loads4|1|mov (%rdi),%rax; mov 8(%rdi),%rbx; mov 16(%rdi),%rdx; mov 24(%rdi),%rsi
load_chain|4|mov (%rax),%rax
stores4|2|mov %rax,(%rdi); mov %rbx,8(%rdi); mov %rax,16(%rdi); mov %rbx,24(%rdi)
div64|14|div %rbx
store_reload|1|mov %rax,(%rsp); mov (%rsp),%rax; add $1,%rax
fadd_chain|2|addsd %xmm1,%xmm0
fmul_chain|3|mulsd %xmm1,%xmm0
fma_chain|4|vfmadd231sd %xmm2,%xmm1,%xmm0
lea_complex|2|lea 1(%rax,%rax,2),%rax
cmov_chain|1|cmp %rbx,%rcx; cmovne %rdx,%rax
popcnt_chain|1|popcnt %rax,%rax
zero_idiom|1|imul %rax,%rax; xor %eax,%eax
mov_elim|3|imul %rax,%rbx; mov %rbx,%rax
LOOPS

rel() { awk -v a="$1" -v b="$2" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; print d }'; }
pct() {	# median and p90 of a column of numbers
	sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "n/a"; exit }
		m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)];
		printf "median %.1f%%, p90 %.1f%%\n", m * 100, p * 100 }'
}
printf "%-14s %9s %9s %9s\n" loop measured dcpi llvm-mca
: >"$tmp/d"; : >"$tmp/m"
t_dcpi=0; t_mca=0; n=0
while IFS='|' read -r name meas body; do
	printf '%s\ndec %%rcx\njne 1b\n' "1: $(echo "$body" | tr ';' '\n')" >"$tmp/l.s"
	as "$tmp/l.s" -o "$tmp/l.o" || continue
	objcopy -O binary -j .text "$tmp/l.o" "$tmp/l.bin"
	hex=$(od -An -tx1 -v "$tmp/l.bin" | tr -s ' \n' ' ')
	s0=$(date +%s%N)
	ours=$("$DCPI" model --model zen5 --json --hex "$hex" |
	       sed -n 's/.*"steady_cycles": \([0-9.]*\).*/\1/p')
	s1=$(date +%s%N)
	mca=$("$MCA" -mcpu=znver5 -iterations=100 "$tmp/l.s" 2>/dev/null |
	      awk '/^Total Cycles:/ { print $3 / 100 }')
	s2=$(date +%s%N)
	t_dcpi=$((t_dcpi + s1 - s0)); t_mca=$((t_mca + s2 - s1)); n=$((n + 1))
	printf "%-14s %9s %9s %9s\n" "$name" "$meas" "$ours" "${mca:-?}"
	rel "$ours" "$meas" >>"$tmp/d"
	[ -n "$mca" ] && rel "$mca" "$meas" >>"$tmp/m"
done <"$tmp/loops"
echo "dcpi model vs measured:  $(pct <"$tmp/d")"
echo "llvm-mca   vs measured:  $(pct <"$tmp/m")"
echo "per loop, one process each: dcpi model $((t_dcpi / n / 1000)) us," \
     "llvm-mca $((t_mca / n / 1000)) us"
