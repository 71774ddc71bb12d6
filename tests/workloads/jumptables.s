# jumptables.s - indirect jumps the CFG tests check one by one (tests/test_cfg.c):
# tables bounded by `cmpb` before a movzbl, by a compare of the memory the
# index is loaded from, by a compare of that memory under another address
# (xz's rc_encode: the index loaded through lea 12(%rdx),%rcx from where
# 0x30(%rax,%rdx,4) was compared), by a compare before the index is copied, a PIC table
# whose base was loaded before a loop (also into a register used for other
# things, reached by that load on every path), a 256-entry table on a byte, a table
# entry in a .cold fragment; tail calls through a pointer after the epilogue
# and in a leaf; and two jumps that must stay unresolved (frame still set up,
# no bound).  Linked with -nostdlib -static -no-pie; never run.
	.text
	.globl	_start
	.type	_start, @function
_start:
	movl	$60, %eax
	xorl	%edi, %edi
	syscall
	.size	_start, .-_start

	.type	t_cmpb, @function
t_cmpb:
	movzbl	(%rdi), %eax
	subl	$4, %eax
	cmpb	$2, %al
	ja	.Lcb_def
	movzbl	%al, %eax
	jmp	*.Lcb_tab(,%rax,8)
.Lcb0:	movl	$1, %eax
	ret
.Lcb1:	movl	$2, %eax
	ret
.Lcb_def:
	xorl	%eax, %eax
	ret
	.size	t_cmpb, .-t_cmpb

	.type	t_cmpb.cold, @function
t_cmpb.cold:
	movl	$3, %eax
	ret
	.size	t_cmpb.cold, .-t_cmpb.cold

	.type	t_mem, @function
t_mem:
	cmpl	$2, 8(%rdi)
	movq	%rsi, (%rdx)
	ja	.Lm_def
	movl	8(%rdi), %eax
	jmp	*.Lm_tab(,%rax,8)
.Lm0:	movl	$1, %eax
	ret
.Lm1:	movl	$2, %eax
	ret
.Lm2:	movl	$3, %eax
	ret
.Lm_def:
	xorl	%eax, %eax
	ret
	.size	t_mem, .-t_mem

	.type	t_lea, @function
t_lea:
	leaq	.Ll_tab(%rip), %r9
	movq	0x28(%rdi), %rdx
	cmpl	$2, 0x30(%rdi,%rdx,4)
	leaq	0xc(%rdx), %rcx
	ja	.Ll_def
	movl	(%rdi,%rcx,4), %ecx
	movslq	(%r9,%rcx,4), %rcx
	addq	%r9, %rcx
	jmp	*%rcx
.Ll0:	movl	$1, %eax
	ret
.Ll1:	movl	$2, %eax
	ret
.Ll2:	movl	$3, %eax
	ret
.Ll_def:
	xorl	%eax, %eax
	ret
	.size	t_lea, .-t_lea

	.type	t_copy, @function
t_copy:
	movzbl	(%rdi), %ecx
	movzbl	%cl, %r8d
	cmpb	$2, %cl
	ja	.Lc_def
	jmp	*.Lc_tab(,%r8,8)
.Lc0:	movl	$1, %eax
	ret
.Lc1:	movl	$2, %eax
	ret
.Lc2:	movl	$3, %eax
	ret
.Lc_def:
	xorl	%eax, %eax
	ret
	.size	t_copy, .-t_copy

	.type	t_pic, @function
t_pic:
	pushq	%rbx
	leaq	.Lp_tab(%rip), %rbx
.Lp_loop:
	movl	(%rdi), %eax
	addq	$4, %rdi
	cmpl	$2, %eax
	ja	.Lp_out
	movslq	(%rbx,%rax,4), %rax
	addq	%rbx, %rax
	jmp	*%rax
.Lp0:	incl	%esi
	jmp	.Lp_loop
.Lp1:	decl	%esi
	jmp	.Lp_loop
.Lp2:	addl	$2, %esi
	jmp	.Lp_loop
.Lp_out:
	movl	%esi, %eax
	popq	%rbx
	ret
	.size	t_pic, .-t_pic

# the base hoisted into a register the procedure also uses for something
# else (wc's word loop keeps its switch's table in r15): the one lea that
# reaches the jump on every path, a call on the way keeping r15
	.type	t_reach, @function
t_reach:
	pushq	%r15
	movq	(%rsi), %r15
	addl	(%r15), %edx
	leaq	.Lr_tab(%rip), %r15
	call	t_byte
.Lr_loop:
	movl	(%rdi), %eax
	addq	$4, %rdi
	cmpl	$2, %eax
	ja	.Lr_out
	movslq	(%r15,%rax,4), %rax
	addq	%r15, %rax
	jmp	*%rax
.Lr0:	incl	%esi
	jmp	.Lr_loop
.Lr1:	decl	%esi
	jmp	.Lr_loop
.Lr2:	addl	$2, %esi
	jmp	.Lr_loop
.Lr_out:
	movl	%esi, %eax
	popq	%r15
	ret
	.size	t_reach, .-t_reach

# the same with rcx, which the call may change: not resolved
	.type	t_reach_call, @function
t_reach_call:
	pushq	%rbx
	movq	(%rsi), %rcx
	addl	(%rcx), %edx
	leaq	.Lr_tab(%rip), %rcx
	call	t_byte
	movl	(%rdi), %eax
	cmpl	$2, %eax
	ja	.Lrc_out
	movslq	(%rcx,%rax,4), %rax
	addq	%rcx, %rax
	jmp	*%rax
.Lrc_out:
	popq	%rbx
	ret
	.size	t_reach_call, .-t_reach_call

	.type	t_byte, @function
t_byte:
	movzbl	%dil, %eax
	jmp	*.Lb_tab(,%rax,8)
.Lb0:	movl	$1, %eax
	ret
.Lb_def:
	xorl	%eax, %eax
	ret
	.size	t_byte, .-t_byte

	.type	t_tail, @function
t_tail:
	pushq	%rbx
	subq	$16, %rsp
	movq	%rdi, %rbx
	call	t_mem
	movq	8(%rbx), %rax
	addq	$16, %rsp
	popq	%rbx
	jmp	*%rax
	.size	t_tail, .-t_tail

	.type	t_virtual, @function
t_virtual:
	movq	(%rdi), %rax
	jmp	*0x18(%rax)
	.size	t_virtual, .-t_virtual

	.type	t_frame, @function
t_frame:
	pushq	%rbx
	movq	(%rdi), %rax
	jmp	*%rax
	.size	t_frame, .-t_frame

	.type	t_unbounded, @function
t_unbounded:
	movl	%edi, %eax
	jmp	*.Lu_tab(,%rax,8)
.Lu0:	ret
.Lu1:	ret
	.size	t_unbounded, .-t_unbounded

	.section .rodata
	.align 8
.Lcb_tab:
	.quad	.Lcb0, .Lcb1, t_cmpb.cold
.Lm_tab:
	.quad	.Lm0, .Lm1, .Lm2
.Lu_tab:
	.quad	.Lu0, .Lu1
.Lc_tab:
	.quad	.Lc0, .Lc1, .Lc2
.Lp_tab:
	.long	.Lp0-.Lp_tab, .Lp1-.Lp_tab, .Lp2-.Lp_tab
.Lr_tab:
	.long	.Lr0-.Lr_tab, .Lr1-.Lr_tab, .Lr2-.Lr_tab
.Ll_tab:
	.long	.Ll0-.Ll_tab, .Ll1-.Ll_tab, .Ll2-.Ll_tab
	.align 8
.Lb_tab:
	.quad	.Lb0
	.rept	255
	.quad	.Lb_def
	.endr
