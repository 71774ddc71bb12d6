#!/bin/sh
# bench/bhive/binding.sh - the bodies of docs/models.md "Load latency" and
# "ALU scheduler binding (open)", timed on this machine with a
# contention canary: a pass of bench/bhive/harness counts only when 4
# independent adds, timed just before and just after the bodies, read under
# 1.02 cycles (a busy sibling thread of the host core makes them 1.3-2.0).
# Prints, per body, the passes that counted and the least, median and most
# cycles per iteration over them.
#
# Sets: load (pointer chases through each addressing form and load width),
# A (an add recurrence; d ALU ops chained on it, i more recurrences, f
# independent mov $5), L (the same behind a stepping byte load), P (where
# the load sits, and its latency), S (shifts); T (gzip's digit loop: a load
# and two ALU ops on it beside the pointer's add, reordered), K (lzma's
# 0x20690+0x190 loop taken apart: a store taking a turn), I (stores of an
# immediate).  T, K and I are real-loop shapes: time them with FLAGS="-W -D"
# as bench_model.sh times the real loops (bench/notes/models-log.md "The
# references reproduce; the binding is still open").
# Environment: BUILD (build), PASSES (8), SETS ("load A L P S"), CPU (the
# last), FLAGS (harness flags, none).
# Needs GNU as and objcopy, like bench_model.sh.
set -eu
: "${BUILD:=build}"
: "${PASSES:=8}"
: "${SETS:=load A L P S}"
: "${CPU:=$(($(getconf _NPROCESSORS_ONLN) - 1))}"
: "${FLAGS:=}"
H="$BUILD/bhive/harness"
[ -x "$H" ] || { echo "binding.sh: $H missing (sh bench/bench_model.sh builds it)"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# body NAME 'asm; asm; ...': one line of the harness's input
body() {
	printf '%s\n' "$2" | tr ';' '\n' > "$W/b.s"
	as "$W/b.s" -o "$W/b.o" && objcopy -O binary -j .text "$W/b.o" "$W/b.bin"
	printf '%s\t%s\n' "$1" "$(od -An -tx1 -v "$W/b.bin" | tr -s ' \n' '  ' |
		sed 's/^ //; s/ $//')"
}

set_load() {
	for a in '(%rax)' '8(%rax)' '(%rbx,%rax,1)' '0x40000000(,%rax,1)' '(%rbx,%rax,2)' \
		'(%rbx,%rax,4)' '(%rbx,%rax,8)' '0x40000000(,%rax,2)' '8(%rbx,%rax,1)' \
		'-8(%rbx,%rax,1)' '0xc80(%rbx,%rax,4)'; do
		body "mov_$a" "mov $a,%rax"
	done
	for op in movzbl movzwl movsbl movswl; do
		body "${op}_bi" "$op (%rbx,%rax,1),%eax"
	done
	for op in movsbq movswq movslq; do
		body "${op}_bi" "$op (%rbx,%rax,1),%rax"
	done
	body movslq_b 'movslq (%rax),%rax'
	body movslq_bid4 'movslq 0xc80(%rbx,%rax,4),%rax'
	body movsbl_bi4 'movsbl (%rbx,%rax,4),%eax'
	body movzbl_bi2 'movzbl (%rbx,%rax,2),%eax'
	for a in '(%rbx,%rax,1)' '(%rbx,%rax,4)' '8(%rbx,%rax,1)' '8(%rax)'; do
		body "and_$a" "and $a,%eax"
	done
	for a in '(%rax)' '(%rbx,%rax,1)' '(%rbx,%rax,2)' '8(%rbx,%rax,1)'; do
		body "vmovq_$a" "vmovq $a,%xmm0; vmovq %xmm0,%rax"
	done
}

# chain HEAD D I F [MAXF]: HEAD, then D ops on its value (a lea, then adds),
# I add recurrences, F mov $5
chain() {
	b=$1 d=$2 i=$3 f=$4 k=1
	if [ "$d" -ge 1 ]; then
		b="$b; lea 1(%$5),%ecx"
		while [ $k -lt "$d" ]; do b="$b; add \$1,%ecx"; k=$((k + 1)); done
	fi
	for r in r8d r9d r10d; do [ "$i" -gt 0 ] && b="$b; add \$1,%$r" && i=$((i - 1)); done
	for r in r12d r13d r14d; do [ "$f" -gt 0 ] && b="$b; mov \$5,%$r" && f=$((f - 1)); done
	printf '%s' "$b"
}

set_A() {
	for d in 0 1 2 3; do for i in 0 1 2; do for f in 0 1 2; do
		body "A_d${d}_i${i}_f${f}" "$(chain 'add $1,%edx' $d $i $f rdx)"
	done; done; done
}

set_L() {
	for d in 0 1 2 3; do for i in 0 1 2; do for f in 0 1; do
		body "L_d${d}_i${i}_f${f}" \
			"$(chain 'movzbl 1(%rax),%esi; addq $1,%rax' $d $i $f rsi)"
	done; done; done
}

# where the load sits and how late its value comes (4, 5, 6 cycles)
set_P() {
	body P_ld_first 'movzbl 1(%rax),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%ecx'
	body P_add_first 'addq $1,%rax; movzbl (%rax),%esi; lea 1(%rsi),%ecx; add $1,%ecx'
	body P_ld_last 'lea 1(%rsi),%ecx; add $1,%ecx; addq $1,%rax; movzbl (%rax),%esi'
	body P_ld_mid 'addq $1,%rax; lea 1(%rsi),%ecx; movzbl (%rax),%esi; add $1,%ecx'
	body P_ld_first_L5 'movzbl 1(%rbx,%rax,1),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%ecx'
	body P_ld_first_L6 'movsbl 1(%rbx,%rax,1),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%ecx'
	body P_dep_rec 'movzbl 1(%rax),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%r8d'
	body P_dep_rec_L5 'movzbl 1(%rbx,%rax,1),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%r8d'
	body P_dep_rec_L6 'movsbl 1(%rbx,%rax,1),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%r8d'
	body P_dep_mov 'movzbl 1(%rax),%esi; addq $1,%rax; lea 1(%rsi),%ecx; mov $5,%r8d'
	body P_dep_mov_L5 'movzbl 1(%rbx,%rax,1),%esi; addq $1,%rax; lea 1(%rsi),%ecx; mov $5,%r8d'
}

set_S() {
	body S_add_shlcl_cmp 'add $1,%ecx; mov %esi,%eax; shl %cl,%eax; cmp %edx,%eax'
	body S_add_shlimm_cmp 'add $1,%ecx; mov %esi,%eax; shl $3,%eax; cmp %edx,%eax'
	body S_add_lea_shl 'add $1,%ecx; lea 1(%rcx),%eax; shl $3,%eax'
	body S_add_shlcl_add 'add $1,%ecx; mov %esi,%eax; shl %cl,%eax; add $1,%eax'
	body S_add_lea_add_shl 'add $1,%ecx; lea 1(%rcx),%eax; add $1,%eax; shl $3,%eax'
	body S_add_lea_shl_add 'add $1,%ecx; lea 1(%rcx),%eax; shl $3,%eax; add $1,%eax'
	body S_shl_3add 'shl $1,%eax; add $1,%r8d; add $1,%r9d; add $1,%r10d'
	body S_2shl_1add 'shl $1,%eax; shl $1,%edx; add $1,%r8d'
	body S_2shl_2add 'shl $1,%eax; shl $1,%edx; add $1,%r8d; add $1,%r9d'
	body S_2shl_3add 'shl $1,%eax; shl $1,%edx; add $1,%r8d; add $1,%r9d; add $1,%r10d'
	body S_3shl_1add 'shl $1,%eax; shl $1,%edx; shl $1,%esi; add $1,%r8d'
	body S_inc_cmovc2 'inc %rax; cmovc %rbx,%rcx; inc %rdx; cmovc %rbx,%rsi'
}

# a load, the pointer's add, and ALU ops on the loaded value (-W -D, 2026-11-26:
# T_ld_add_lea_cmp 1.48, T_ld_lea_add_cmp 1.00, T_ld_lea_cmp_add 1.17, with a
# fifth op 1.01, T_ld_add_lea_rec 1.25, with four nops after it 1.13)
set_T() {
	body T_ld_add_lea_cmp 'movzbl 1(%rax),%esi; addq $1,%rax; lea -0x30(%rsi),%ecx; cmpb $9,%cl'
	body T_ld_lea_add_cmp 'movzbl 1(%rax),%esi; lea -0x30(%rsi),%ecx; addq $1,%rax; cmpb $9,%cl'
	body T_ld_lea_cmp_add 'movzbl 1(%rax),%esi; lea -0x30(%rsi),%ecx; cmpb $9,%cl; addq $1,%rax'
	body T_ld_add_lea_cmp_mov 'movzbl 1(%rax),%esi; addq $1,%rax; lea -0x30(%rsi),%ecx; cmpb $9,%cl; mov $5,%edi'
	body T_fixed_ld 'movzbl 1(%rbx),%esi; addq $1,%rax; lea -0x30(%rsi),%ecx; cmpb $9,%cl'
	body T_ld_add_lea 'movzbl 1(%rax),%esi; addq $1,%rax; lea -0x30(%rsi),%ecx'
	body T_ld_add_lea_lea 'movzbl 1(%rax),%esi; addq $1,%rax; lea 1(%rsi),%ecx; lea 1(%rsi),%edi'
	body T_ld_add_lea_rec 'movzbl 1(%rax),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%r8d'
	body T_ld_add_mov_rec 'movzbl 1(%rax),%esi; addq $1,%rax; mov $5,%ecx; add $1,%r8d'
	body T_ld_add_lea_rec_nop4 'movzbl 1(%rax),%esi; addq $1,%rax; lea 1(%rsi),%ecx; add $1,%r8d; nop; nop; nop; nop'
}

# lzma's 0x20690+0x190 (2.00): any one of lea, store, cmp left out 1.00
set_K() {
	body K_full 'lea (,%r11,8),%ecx; mov %rdi,%rbx; shr %cl,%rbx; movb %bl,(%r8,%r11); add $1,%r11; cmp $6,%r11'
	body K_no_store 'lea (,%r11,8),%ecx; mov %rdi,%rbx; shr %cl,%rbx; add $1,%r11; cmp $6,%r11'
	body K_no_lea 'mov %rdi,%rbx; shr %cl,%rbx; movb %bl,(%r8,%r11); add $1,%r11; cmp $6,%r11'
	body K_no_cmp 'lea (,%r11,8),%ecx; mov %rdi,%rbx; shr %cl,%rbx; movb %bl,(%r8,%r11); add $1,%r11'
	body K_shr_imm 'lea (,%r11,8),%ecx; mov %rdi,%rbx; shr $3,%rbx; movb %bl,(%r8,%r11); add $1,%r11; cmp $6,%r11'
	body K_dword 'lea (,%r11,8),%ecx; mov %rdi,%rbx; shr %cl,%rbx; movl %ebx,(%r8,%r11); add $1,%r11; cmp $6,%r11'
	body K_four 'lea (,%r11,8),%ecx; movb %bl,(%r8,%r11); add $1,%r11; cmp $6,%r11'
	body K_five 'lea (,%r11,8),%ecx; movb %bl,(%r8,%r11); add $1,%r11; mov $5,%edx; cmp $6,%r11'
	body K_movzx 'movb %dl,0xd2(%rsp,%rax); add $1,%edx; movzbl %dl,%eax; cmp %r12d,%eax'
	body K_movzx_nostore 'add $1,%edx; movzbl %dl,%eax; cmp %r12d,%eax'
}

# stores of an immediate (1.24 through the stepping pointer with a compare
# on it; movb/movw 1.00; 1.13 with the compare elsewhere; four adds and movl
# $5 1.33, with movb $5 1.00)
set_I() {
	body I_reg 'movl %edx,(%rax); addq $4,%rax; cmpq %rax,%rdx'
	body I_imm32 'movl $7,(%rax); addq $4,%rax; cmpq %rax,%rdx'
	body I_imm8 'movb $7,(%rax); addq $4,%rax; cmpq %rax,%rdx'
	body I_imm16 'movw $7,(%rax); addq $4,%rax; cmpq %rax,%rdx'
	body I_imm32_nocmp 'movl $7,(%rax); addq $4,%rax'
	body I_imm32_cmp_other 'movl $7,(%rax); addq $4,%rax; cmpq %rcx,%rdx'
	body I_imm32_index 'movl $7,(%rax,%rcx); addq $4,%rcx; cmpq %rax,%rdx'
	body I_imm32_disp 'movl $7,4(%rax); addq $4,%rax; cmpq %rax,%rdx'
	body I_imm32_x2 'movl $7,(%rax); movl $7,4(%rax); addq $8,%rax; cmpq %rax,%rdx'
	body I_adds4_imm32 'add $1,%r8; add $1,%r9; add $1,%r10; add $1,%r11; movl $5,(%rsi)'
	body I_adds4_imm8 'add $1,%r8; add $1,%r9; add $1,%r10; add $1,%r11; movb $5,(%rsi)'
}

: > "$W/in"
for s in $SETS; do "set_$s" >> "$W/in"; done
canary=$(body canary 'add $1,%ecx; add $1,%r8d; add $1,%r9d; add $1,%r10d')
q=0
for p in $(seq 1 "$PASSES"); do
	{ echo "$canary"; cat "$W/in"; echo "$canary" | sed 's/^canary/canary2/'; } > "$W/pass"
	# shellcheck disable=SC2086
	"$H" -c "$CPU" -r 31 $FLAGS "$W/pass" 2>"$W/err" | grep -v '^#' | cut -f1,3 > "$W/out"
	if awk '$1 ~ /^canary/ && ($2 == "-" || $2 >= 1.02) { bad = 1 } END { exit bad }' "$W/out"
	then
		q=$((q + 1))
		cp "$W/out" "$W/q$q"
	fi
done
echo "# $q of $PASSES passes quiet (canary under 1.02 cycles before and after), cpu $CPU"
[ "$q" -gt 0 ] || exit 0
cat "$W"/q* | awk '$1 !~ /^canary/ && $2 != "-" { print }' | sort -k1,1 -k2,2g |
	awk '{ v[$1] = v[$1] " " $2; n[$1]++ }
	     END { for (k in v) { split(substr(v[k], 2), a, " ");
		   printf "%-24s passes %2d  least %7.3f  median %7.3f  most %7.3f\n",
			  k, n[k], a[1], a[int((n[k] + 1) / 2)], a[n[k]] } }' | sort
