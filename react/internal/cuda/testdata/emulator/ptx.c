// Modules and kernels: cuModuleLoadData parses PTX text, and
// cuLaunchKernel queues an interpreter of it that runs every thread of the
// grid, one after another, when the stream executes. The interpreter knows
// a subset of PTX (what kernels.go's kernels use and the common integer,
// floating-point, conversion, comparison, load, store and branch
// instructions); anything else makes cuModuleLoadData fail with
// CUDA_ERROR_NOT_SUPPORTED, naming the line, so that a new kernel is
// emulated on purpose, never approximated. Every global load and store is
// checked against one allocation (CUDA_ERROR_ILLEGAL_ADDRESS, sticky) and
// for alignment (CUDA_ERROR_MISALIGNED_ADDRESS); registers start as all
// ones bits, so a read before a write shows as NaN or a wild address.

#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

// ---- the parsed form ----

typedef struct {
	char kind; // 'b', 'u', 's', 'f', 'p' (predicate); 0: none
	int bits;
} ptype;

enum { O_NONE, O_REG, O_IMM, O_SREG, O_PARAM, O_MEM, O_LABEL };
enum { IMM_INT, IMM_F32BITS, IMM_F64BITS, IMM_FLOAT };

typedef struct {
	int k;
	int reg;   // O_REG; O_MEM's base register, or -1
	int param; // O_PARAM; O_MEM on a parameter, or -1
	int sreg;  // O_SREG
	int ikind; // O_IMM
	uint64_t ival;
	double fval;
	int64_t off; // O_MEM
	int label;   // O_LABEL: a label index, then an instruction index
} opnd;

enum {
	I_LD, I_ST, I_CVTA, I_MOV, I_ADD, I_SUB, I_MUL, I_MAD, I_FMA, I_DIV, I_REM, I_MIN, I_MAX, I_NEG, I_ABS, I_SQRT,
	I_AND, I_OR, I_XOR, I_NOT, I_SHL, I_SHR, I_SETP, I_SELP, I_CVT, I_BRA, I_RET,
};
enum { M_LO, M_HI, M_WIDE };                                  // mul, mad
enum { S_GLOBAL, S_PARAM };                                   // ld, st
enum { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE, C_EQU, C_NEU, C_LTU, C_LEU, C_GTU, C_GEU, C_NUM, C_NAN }; // setp
enum { R_NONE, R_RN, R_RNI, R_RZI, R_RMI, R_RPI };            // cvt

typedef struct {
	int op;
	ptype t, t2; // the type; cvt's source type
	int mode;
	int pred, pneg; // guard: predicate register, or -1
	int n;
	opnd a[4];
	int line;
	char text[40];
} insn;

typedef struct {
	char name[64];
	ptype t;
	int size, offset;
} param;

struct CUfunc_st {
	emu_obj obj;
	struct CUmod_st *mod;
	char name[128];
	param params[32];
	int nparams, psize;
	insn *code;
	int ncode;
	int nregs;
};

// The special registers: %tid, %ntid, %ctaid, %nctaid, each .x .y .z.
static const char *sreg_names[] = {"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
                                   "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z"};

// ---- tokens ----

typedef struct {
	const char *s;
	int len, line;
} tok;

typedef struct {
	tok *t;
	int n, cap, i;
	char *err; // the first error, with its line
	size_t errlen;
	CUresult code;
} parser;

static int fail(parser *p, CUresult code, int line, const char *fmt, ...) EMU_PRINTF(4, 5);
static int fail(parser *p, CUresult code, int line, const char *fmt, ...) {
	if (p->code == CUDA_SUCCESS) {
		va_list ap;
		va_start(ap, fmt);
		int k = snprintf(p->err, p->errlen, "PTX line %d: ", line);
		if (k >= 0 && (size_t)k < p->errlen) {
			vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
		}
		va_end(ap);
		p->code = code;
	}
	return -1;
}

static int ident_char(int c) { return isalnum(c) || c == '_' || c == '.' || c == '$' || c == '%'; }

static int tokenize(parser *p, const char *s) {
	int line = 1;
	while (*s) {
		if (*s == '\n') {
			line++, s++;
		} else if (isspace((unsigned char)*s)) {
			s++;
		} else if (s[0] == '/' && s[1] == '/') {
			while (*s && *s != '\n') {
				s++;
			}
		} else if (s[0] == '/' && s[1] == '*') {
			for (s += 2; *s && !(s[0] == '*' && s[1] == '/'); s++) {
				line += *s == '\n';
			}
			if (*s) {
				s += 2;
			}
		} else {
			int len = 1;
			if (ident_char((unsigned char)*s)) {
				while (ident_char((unsigned char)s[len])) {
					len++;
				}
			} else if (!strchr("(){}[],;:+-@!<>|", *s)) {
				return fail(p, CUDA_ERROR_INVALID_PTX, line, "unexpected character '%c'", *s);
			}
			if (p->n == p->cap) {
				p->cap = p->cap ? 2 * p->cap : 256;
				p->t = realloc(p->t, (size_t)p->cap * sizeof *p->t);
				if (p->t == NULL) {
					abort();
				}
			}
			p->t[p->n++] = (tok){s, len, line};
			s += len;
		}
	}
	return 0;
}

static tok *peek(parser *p) {
	static tok end = {"", 0, 0};
	return p->i < p->n ? &p->t[p->i] : &end;
}
static int is(const tok *t, const char *s) { return t->len == (int)strlen(s) && strncmp(t->s, s, (size_t)t->len) == 0; }
static tok *next(parser *p) {
	tok *t = peek(p);
	if (p->i < p->n) {
		p->i++;
	}
	return t;
}
static int expect(parser *p, const char *s) {
	tok *t = next(p);
	if (!is(t, s)) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "expected '%s', found '%.*s'", s, t->len, t->s);
	}
	return 0;
}
static void copy_tok(char *dst, size_t n, const tok *t) { snprintf(dst, n, "%.*s", t->len, t->s); }

// type_of parses a type suffix ("u32", "f64", "pred"); 0 kind if none.
static ptype type_of(const char *s) {
	ptype t = {0, 0};
	if (strcmp(s, "pred") == 0) {
		return (ptype){'p', 1};
	}
	if (strchr("busf", s[0]) && isdigit((unsigned char)s[1])) {
		int bits = atoi(s + 1);
		if ((bits == 8 || bits == 16 || bits == 32 || bits == 64) && !(s[0] == 'f' && bits < 32)) {
			t.kind = s[0], t.bits = bits;
		}
	}
	return t;
}

// ---- functions being parsed ----

typedef struct {
	char name[32];
} regname;

typedef struct {
	char name[64];
	int at; // instruction index, -1 until defined
	int line;
} label;

typedef struct {
	struct CUfunc_st *f;
	regname *regs;
	int nregs, capregs;
	label *labels;
	int nlabels, caplabels;
	int capcode;
} fbuild;

static int add_reg(parser *p, fbuild *b, const char *name, int line) {
	for (int i = 0; i < b->nregs; i++) {
		if (strcmp(b->regs[i].name, name) == 0) {
			return fail(p, CUDA_ERROR_INVALID_PTX, line, "register %s declared twice", name);
		}
	}
	if (b->nregs == b->capregs) {
		b->capregs = b->capregs ? 2 * b->capregs : 64;
		b->regs = realloc(b->regs, (size_t)b->capregs * sizeof *b->regs);
		if (b->regs == NULL) {
			abort();
		}
	}
	snprintf(b->regs[b->nregs].name, sizeof b->regs[0].name, "%s", name);
	return b->nregs++;
}

static int find_label(fbuild *b, const tok *t) {
	for (int i = 0; i < b->nlabels; i++) {
		if (is(t, b->labels[i].name)) {
			return i;
		}
	}
	if (b->nlabels == b->caplabels) {
		b->caplabels = b->caplabels ? 2 * b->caplabels : 16;
		b->labels = realloc(b->labels, (size_t)b->caplabels * sizeof *b->labels);
		if (b->labels == NULL) {
			abort();
		}
	}
	label *l = &b->labels[b->nlabels];
	copy_tok(l->name, sizeof l->name, t);
	l->at = -1;
	l->line = t->line;
	return b->nlabels++;
}

// parse_number parses an immediate: decimal or 0x hex integers (a U
// suffix allowed), 0fXXXXXXXX and 0dXXXXXXXXXXXXXXXX float bits, and
// decimal floats.
static int parse_number(parser *p, const tok *t, int neg, opnd *o) {
	char buf[64];
	copy_tok(buf, sizeof buf, t);
	size_t len = strlen(buf);
	o->k = O_IMM;
	char *end;
	if ((buf[0] == '0') && (buf[1] == 'f' || buf[1] == 'F') && len == 10) {
		o->ikind = IMM_F32BITS;
		o->ival = strtoull(buf + 2, &end, 16);
		if (neg) {
			o->ival ^= 0x80000000u;
		}
	} else if ((buf[0] == '0') && (buf[1] == 'd' || buf[1] == 'D') && len == 18) {
		o->ikind = IMM_F64BITS;
		o->ival = strtoull(buf + 2, &end, 16);
		if (neg) {
			o->ival ^= 0x8000000000000000ull;
		}
	} else if (strpbrk(buf, ".eE") != NULL && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))) {
		o->ikind = IMM_FLOAT;
		o->fval = strtod(buf, &end);
		if (neg) {
			o->fval = -o->fval;
		}
	} else {
		o->ikind = IMM_INT;
		if (len > 1 && (buf[len - 1] == 'U' || buf[len - 1] == 'u')) {
			buf[--len] = 0;
		}
		o->ival = strtoull(buf, &end, 0);
		if (neg) {
			o->ival = (uint64_t)(-(int64_t)o->ival);
		}
	}
	if (*end != 0) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "bad number '%s'", buf);
	}
	return 0;
}

static int parse_operand(parser *p, fbuild *b, opnd *o) {
	memset(o, 0, sizeof *o);
	o->reg = o->param = -1;
	tok *t = next(p);
	if (is(t, "[")) {
		o->k = O_MEM;
		tok *base = next(p);
		if (isdigit((unsigned char)base->s[0])) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, base->line, "absolute addresses are not emulated");
		}
		char name[64];
		copy_tok(name, sizeof name, base);
		for (int i = 0; i < b->nregs; i++) {
			if (strcmp(b->regs[i].name, name) == 0) {
				o->reg = i;
			}
		}
		for (int i = 0; i < b->f->nparams && o->reg < 0; i++) {
			if (strcmp(b->f->params[i].name, name) == 0) {
				o->param = i;
			}
		}
		if (o->reg < 0 && o->param < 0) {
			return fail(p, CUDA_ERROR_INVALID_PTX, base->line, "'%s' is neither a register nor a parameter", name);
		}
		if (is(peek(p), "+") || is(peek(p), "-")) {
			int neg = is(next(p), "-");
			opnd n;
			if (parse_number(p, next(p), neg, &n) < 0 || n.ikind != IMM_INT) {
				return fail(p, CUDA_ERROR_INVALID_PTX, base->line, "bad address offset");
			}
			o->off = (int64_t)n.ival;
		}
		return expect(p, "]");
	}
	if (is(t, "-")) {
		return parse_number(p, next(p), 1, o);
	}
	if (isdigit((unsigned char)t->s[0])) {
		return parse_number(p, t, 0, o);
	}
	if (is(t, "{")) {
		return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "vector operands are not emulated");
	}
	char name[64];
	copy_tok(name, sizeof name, t);
	for (int i = 0; i < b->nregs; i++) {
		if (strcmp(b->regs[i].name, name) == 0) {
			o->k = O_REG, o->reg = i;
			return 0;
		}
	}
	for (int i = 0; i < (int)(sizeof sreg_names / sizeof sreg_names[0]); i++) {
		if (strcmp(sreg_names[i], name) == 0) {
			o->k = O_SREG, o->sreg = i;
			return 0;
		}
	}
	if (name[0] == '%') {
		return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "register %s is undeclared, or a special register the emulator lacks", name);
	}
	for (int i = 0; i < b->f->nparams; i++) {
		if (strcmp(b->f->params[i].name, name) == 0) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "a parameter's address (%s) is not emulated", name);
		}
	}
	o->k = O_LABEL;
	o->label = find_label(b, t);
	return 0;
}

// decode fills in's op, types and mode from the opcode's parts.
static int decode(parser *p, const tok *t, insn *in) {
	char buf[64], *parts[8];
	int np = 0;
	copy_tok(buf, sizeof buf, t);
	snprintf(in->text, sizeof in->text, "%s", buf);
	for (char *s = strtok(buf, "."); s != NULL && np < 8; s = strtok(NULL, ".")) {
		parts[np++] = s;
	}
	if (np == 0) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "empty opcode");
	}
	static const struct {
		const char *name;
		int op;
	} ops[] = {{"ld", I_LD}, {"st", I_ST}, {"cvta", I_CVTA}, {"mov", I_MOV}, {"add", I_ADD}, {"sub", I_SUB}, {"mul", I_MUL},
	           {"mad", I_MAD}, {"fma", I_FMA}, {"div", I_DIV}, {"rem", I_REM}, {"min", I_MIN}, {"max", I_MAX}, {"neg", I_NEG},
	           {"abs", I_ABS}, {"sqrt", I_SQRT}, {"and", I_AND}, {"or", I_OR}, {"xor", I_XOR}, {"not", I_NOT}, {"shl", I_SHL},
	           {"shr", I_SHR}, {"setp", I_SETP}, {"selp", I_SELP}, {"cvt", I_CVT}, {"bra", I_BRA}, {"ret", I_RET}, {"exit", I_RET}};
	in->op = -1;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		if (strcmp(parts[0], ops[i].name) == 0) {
			in->op = ops[i].op;
		}
	}
	if (in->op < 0) {
		return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "instruction '%s' is not emulated", in->text);
	}
	int ntypes = 0, space = -1;
	static const char *cmps[] = {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
	for (int i = 1; i < np; i++) {
		const char *m = parts[i];
		ptype ty = type_of(m);
		if (ty.kind != 0) {
			if (ntypes == 0) {
				in->t = ty;
			} else if (ntypes == 1) {
				in->t2 = ty;
			} else {
				return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "too many types in '%s'", in->text);
			}
			ntypes++;
			continue;
		}
		int known = 0;
		if (in->op == I_SETP) {
			for (int c = 0; c < (int)(sizeof cmps / sizeof cmps[0]); c++) {
				if (strcmp(m, cmps[c]) == 0) {
					in->mode = c, known = 1;
				}
			}
			// setp's unsigned comparisons
			static const char *ucmp[] = {"lo", "ls", "hi", "hs"};
			static const int umap[] = {C_LT, C_LE, C_GT, C_GE};
			for (int c = 0; c < 4; c++) {
				if (strcmp(m, ucmp[c]) == 0) {
					in->mode = umap[c], known = 1;
				}
			}
		} else if (in->op == I_MUL || in->op == I_MAD) {
			if (strcmp(m, "lo") == 0 || strcmp(m, "hi") == 0 || strcmp(m, "wide") == 0) {
				in->mode = m[0] == 'l' ? M_LO : m[0] == 'h' ? M_HI : M_WIDE, known = 1;
			}
		} else if (in->op == I_LD || in->op == I_ST) {
			if (strcmp(m, "global") == 0) {
				space = S_GLOBAL, known = 1;
			} else if (strcmp(m, "param") == 0 && in->op == I_LD) {
				space = S_PARAM, known = 1;
			} else if (strcmp(m, "nc") == 0 || strcmp(m, "ca") == 0 || strcmp(m, "cg") == 0 || strcmp(m, "cs") == 0 || strcmp(m, "wb") == 0) {
				known = 1; // cache hints
			}
		} else if (in->op == I_CVTA) {
			known = strcmp(m, "to") == 0 || strcmp(m, "global") == 0;
		} else if (in->op == I_CVT) {
			static const char *rnd[] = {"rn", "rni", "rzi", "rmi", "rpi"};
			for (int r = 0; r < 5; r++) {
				if (strcmp(m, rnd[r]) == 0) {
					in->mode = R_RN + r, known = 1;
				}
			}
		} else if (in->op == I_BRA) {
			known = strcmp(m, "uni") == 0;
		}
		// The default rounding of float arithmetic, and .full division.
		if (!known && (in->op == I_ADD || in->op == I_SUB || in->op == I_MUL || in->op == I_MAD || in->op == I_FMA || in->op == I_DIV || in->op == I_SQRT)) {
			known = strcmp(m, "rn") == 0 || (in->op == I_DIV && strcmp(m, "full") == 0);
		}
		if (!known) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "'.%s' of '%s' is not emulated", m, in->text);
		}
	}
	int want_types = in->op == I_CVT ? 2 : (in->op == I_BRA || in->op == I_RET) ? 0 : 1;
	if (ntypes != want_types) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "'%s' needs %d type%s", in->text, want_types, want_types == 1 ? "" : "s");
	}
	if (in->op == I_LD || in->op == I_ST) {
		in->mode = space < 0 ? S_GLOBAL : space; // generic addresses are global here
		if (in->t.kind == 'p') {
			return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "'%s': no predicate loads", in->text);
		}
	}
	if (in->op == I_CVTA && in->t.bits != 64) {
		return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "'%s': only 64-bit addresses", in->text);
	}
	if (in->op == I_CVT && in->t2.kind == 'f' && in->t.kind == 'f' && in->t.bits < in->t2.bits && in->mode != R_RN) {
		return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "'%s': only .rn narrowing is emulated", in->text);
	}
	if (in->op == I_CVT && in->t.kind != 'f' && in->t2.kind == 'f' && in->mode == R_NONE) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "'%s': a float to integer conversion needs a rounding modifier", in->text);
	}
	if ((in->op == I_MUL || in->op == I_MAD) && in->t.kind == 'f' && in->mode != M_LO) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "'%s'", in->text);
	}
	if (in->op == I_MUL && in->mode == M_WIDE && in->t.bits > 32) {
		return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "'%s': .wide takes 16- or 32-bit operands", in->text);
	}
	return 0;
}

static const int arity[] = {
	[I_LD] = 2, [I_ST] = 2, [I_CVTA] = 2, [I_MOV] = 2, [I_ADD] = 3, [I_SUB] = 3, [I_MUL] = 3, [I_MAD] = 4, [I_FMA] = 4,
	[I_DIV] = 3, [I_REM] = 3, [I_MIN] = 3, [I_MAX] = 3, [I_NEG] = 2, [I_ABS] = 2, [I_SQRT] = 2, [I_AND] = 3, [I_OR] = 3,
	[I_XOR] = 3, [I_NOT] = 2, [I_SHL] = 3, [I_SHR] = 3, [I_SETP] = 3, [I_SELP] = 4, [I_CVT] = 2, [I_BRA] = 1, [I_RET] = 0,
};

static int parse_insn(parser *p, fbuild *b, int pred, int pneg) {
	struct CUfunc_st *f = b->f;
	if (f->ncode == b->capcode) {
		b->capcode = b->capcode ? 2 * b->capcode : 64;
		f->code = realloc(f->code, (size_t)b->capcode * sizeof *f->code);
		if (f->code == NULL) {
			abort();
		}
	}
	insn *in = &f->code[f->ncode];
	memset(in, 0, sizeof *in);
	in->pred = pred, in->pneg = pneg;
	tok *op = next(p);
	in->line = op->line;
	if (decode(p, op, in) < 0) {
		return -1;
	}
	while (!is(peek(p), ";")) {
		if (in->n == 4) {
			return fail(p, CUDA_ERROR_INVALID_PTX, op->line, "too many operands");
		}
		if (parse_operand(p, b, &in->a[in->n++]) < 0) {
			return -1;
		}
		if (is(peek(p), "|")) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, op->line, "'%s': a second predicate destination is not emulated", in->text);
		}
		if (!is(peek(p), ",")) {
			break;
		}
		next(p);
	}
	if (expect(p, ";") < 0) {
		return -1;
	}
	if (in->n != arity[in->op]) {
		return fail(p, CUDA_ERROR_NOT_SUPPORTED, op->line, "'%s' with %d operands is not emulated", in->text, in->n);
	}
	// Operand kinds: destinations are registers, memory operands where
	// ld and st have them, a label for bra.
	int dst_reg = in->op != I_ST && in->op != I_BRA && in->op != I_RET;
	if (dst_reg && in->a[0].k != O_REG) {
		return fail(p, CUDA_ERROR_INVALID_PTX, op->line, "'%s': the destination must be a register", in->text);
	}
	for (int i = 0; i < in->n; i++) {
		int mem_ok = (in->op == I_LD && i == 1) || (in->op == I_ST && i == 0);
		int label_ok = in->op == I_BRA;
		if ((in->a[i].k == O_MEM) != mem_ok || (in->a[i].k == O_LABEL) != label_ok) {
			return fail(p, CUDA_ERROR_INVALID_PTX, op->line, "'%s': operand %d", in->text, i + 1);
		}
		if (in->a[i].k == O_MEM && (in->a[i].param >= 0) != (in->mode == S_PARAM)) {
			return fail(p, CUDA_ERROR_INVALID_PTX, op->line, "'%s': a parameter is read by ld.param, and only it", in->text);
		}
	}
	f->ncode++;
	return 0;
}

static int parse_params(parser *p, struct CUfunc_st *f) {
	if (expect(p, "(") < 0) {
		return -1;
	}
	while (!is(peek(p), ")")) {
		tok *t = next(p);
		if (!is(t, ".param")) {
			return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "expected .param");
		}
		ptype ty = {0, 0};
		tok *name = NULL;
		while (!is(peek(p), ",") && !is(peek(p), ")")) {
			tok *m = next(p);
			char buf[64];
			copy_tok(buf, sizeof buf, m);
			if (buf[0] == '.' && type_of(buf + 1).kind != 0 && ty.kind == 0) {
				ty = type_of(buf + 1);
			} else if (is(m, ".ptr") || is(m, ".global")) {
				// pointer attributes
			} else if (is(m, ".align")) {
				next(p);
			} else if (is(m, "[")) {
				return fail(p, CUDA_ERROR_NOT_SUPPORTED, m->line, "array parameters are not emulated");
			} else if (buf[0] != '.' && name == NULL) {
				name = m;
			} else {
				return fail(p, CUDA_ERROR_NOT_SUPPORTED, m->line, "parameter attribute '%s' is not emulated", buf);
			}
		}
		if (ty.kind == 0 || ty.kind == 'p' || name == NULL) {
			return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "a parameter needs a type and a name");
		}
		if (f->nparams == 32) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "more than 32 parameters");
		}
		param *pr = &f->params[f->nparams++];
		copy_tok(pr->name, sizeof pr->name, name);
		pr->t = ty;
		pr->size = ty.bits / 8;
		pr->offset = (f->psize + pr->size - 1) / pr->size * pr->size;
		f->psize = pr->offset + pr->size;
		if (f->psize > 256) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "more than 256 bytes of parameters");
		}
		if (is(peek(p), ",")) {
			next(p);
		}
	}
	return expect(p, ")");
}

static int parse_body(parser *p, fbuild *b) {
	while (!is(peek(p), "{")) {
		tok *t = next(p);
		if (t->len == 0) {
			return fail(p, CUDA_ERROR_INVALID_PTX, 0, "a kernel without a body");
		}
		// Performance directives (.maxntid, .reqntid, ...) and their
		// numbers: no effect here.
	}
	next(p);
	while (!is(peek(p), "}")) {
		tok *t = peek(p);
		if (t->len == 0) {
			return fail(p, CUDA_ERROR_INVALID_PTX, 0, "the kernel's body does not end");
		}
		if (is(t, ".reg")) {
			next(p);
			char buf[64];
			copy_tok(buf, sizeof buf, next(p));
			if (buf[0] != '.' || type_of(buf + 1).kind == 0) {
				return fail(p, CUDA_ERROR_INVALID_PTX, t->line, ".reg needs a type");
			}
			do {
				if (is(peek(p), ",")) {
					next(p);
				}
				tok *name = next(p);
				char nb[32];
				copy_tok(nb, sizeof nb, name);
				if (is(peek(p), "<")) {
					next(p);
					opnd n;
					if (parse_number(p, next(p), 0, &n) < 0 || expect(p, ">") < 0) {
						return -1;
					}
					if (n.ikind != IMM_INT || n.ival > 65536) {
						return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "%s<%llu>: too many registers", nb, (unsigned long long)n.ival);
					}
					for (uint64_t i = 0; i < n.ival; i++) {
						char rn[40];
						snprintf(rn, sizeof rn, "%s%llu", nb, (unsigned long long)i);
						if (add_reg(p, b, rn, t->line) < 0) {
							return -1;
						}
					}
				} else if (add_reg(p, b, nb, t->line) < 0) {
					return -1;
				}
			} while (is(peek(p), ","));
			if (expect(p, ";") < 0) {
				return -1;
			}
			continue;
		}
		if (is(t, ".pragma")) {
			while (!is(next(p), ";") && p->i < p->n) {
			}
			continue;
		}
		if (t->s[0] == '.') {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "'%.*s' in a kernel is not emulated", t->len, t->s);
		}
		if (is(t, "{") || is(t, "}")) {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "nested blocks are not emulated");
		}
		if (p->i + 1 < p->n && is(&p->t[p->i + 1], ":")) {
			int l = find_label(b, t);
			if (b->labels[l].at >= 0) {
				return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "label %.*s defined twice", t->len, t->s);
			}
			b->labels[l].at = b->f->ncode;
			p->i += 2;
			continue;
		}
		int pred = -1, pneg = 0;
		if (is(t, "@")) {
			next(p);
			if (is(peek(p), "!")) {
				next(p);
				pneg = 1;
			}
			opnd o;
			if (parse_operand(p, b, &o) < 0) {
				return -1;
			}
			if (o.k != O_REG) {
				return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "a guard must be a predicate register");
			}
			pred = o.reg;
		}
		if (parse_insn(p, b, pred, pneg) < 0) {
			return -1;
		}
	}
	next(p);
	// Branch targets.
	struct CUfunc_st *f = b->f;
	for (int i = 0; i < f->ncode; i++) {
		insn *in = &f->code[i];
		if (in->op == I_BRA) {
			label *l = &b->labels[in->a[0].label];
			if (l->at < 0) {
				return fail(p, CUDA_ERROR_INVALID_PTX, in->line, "undefined label %s", l->name);
			}
			in->a[0].label = l->at;
		}
	}
	if (f->ncode == 0 || f->code[f->ncode - 1].op != I_RET || f->code[f->ncode - 1].pred >= 0) {
		// A kernel that can run off its end.
		if (f->ncode == b->capcode) {
			f->code = realloc(f->code, (size_t)(++b->capcode) * sizeof *f->code);
			if (f->code == NULL) {
				abort();
			}
		}
		insn *r = &f->code[f->ncode++];
		memset(r, 0, sizeof *r);
		r->op = I_RET;
		r->pred = -1;
		snprintf(r->text, sizeof r->text, "(end)");
	}
	f->nregs = b->nregs;
	return 0;
}

// ---- the driver functions ----

static struct CUfunc_st **funcs; // every kernel of every module loaded
static int nfuncs, capfuncs;

static int parse_module(parser *p, struct CUmod_st *m) {
	while (p->i < p->n && p->code == CUDA_SUCCESS) {
		tok *t = next(p);
		char buf[64];
		copy_tok(buf, sizeof buf, t);
		if (is(t, ".version")) {
			tok *v = next(p);
			if (atoi(v->s) > 9) {
				return fail(p, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, t->line, "PTX ISA %.*s is newer than CUDA 13's", v->len, v->s);
			}
		} else if (is(t, ".target")) {
			do {
				tok *v = next(p);
				if (v->len > 3 && strncmp(v->s, "sm_", 3) == 0 && atoi(v->s + 3) > 90) {
					return fail(p, CUDA_ERROR_INVALID_PTX, t->line, "target %.*s: the emulator is an sm_90 device", v->len, v->s);
				}
			} while (is(peek(p), ",") && next(p));
		} else if (is(t, ".address_size")) {
			if (!is(next(p), "64")) {
				return fail(p, CUDA_ERROR_INVALID_PTX, t->line, ".address_size must be 64");
			}
		} else if (is(t, ".visible") || is(t, ".weak")) {
			// linkage
		} else if (is(t, ".entry")) {
			struct CUfunc_st *f = calloc(1, sizeof *f);
			if (f == NULL) {
				abort();
			}
			f->mod = m;
			copy_tok(f->name, sizeof f->name, next(p));
			fbuild b = {.f = f};
			int r = parse_params(p, f) < 0 ? -1 : parse_body(p, &b);
			free(b.regs);
			free(b.labels);
			if (r < 0) {
				free(f->code);
				free(f);
				return -1;
			}
			emu_register(&f->obj, OBJ_FUNC);
			if (nfuncs == capfuncs) {
				capfuncs = capfuncs ? 2 * capfuncs : 16;
				funcs = realloc(funcs, (size_t)capfuncs * sizeof *funcs);
				if (funcs == NULL) {
					abort();
				}
			}
			funcs[nfuncs++] = f;
		} else {
			return fail(p, CUDA_ERROR_NOT_SUPPORTED, t->line, "'%s' at the top of a module is not emulated", buf);
		}
	}
	return p->code == CUDA_SUCCESS ? 0 : -1;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
	emu_lock();
	struct CUctx_st *c;
	CUresult r = emu_need_ctx("cuModuleLoadData", &c);
	if (r != CUDA_SUCCESS) {
		emu_unlock();
		return r;
	}
	if (module == NULL || image == NULL) {
		emu_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	const unsigned char *img = image;
	if (img[0] == 0x7f && img[1] == 'E' && img[2] == 'L' && img[3] == 'F') {
		emu_report("cuModuleLoadData", "a cubin (ELF) image: the emulator runs PTX only: CUDA_ERROR_NOT_SUPPORTED");
		emu_unlock();
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	struct CUmod_st *m = calloc(1, sizeof *m);
	if (m == NULL) {
		abort();
	}
	m->ctx = c;
	char err[512] = "";
	parser p = {.err = err, .errlen = sizeof err, .code = CUDA_SUCCESS};
	int first = nfuncs;
	if (tokenize(&p, image) < 0 || parse_module(&p, m) < 0) {
		const char *name = emu_cu_name(p.code);
		emu_report("cuModuleLoadData", "%s: %s", err, name ? name : "?");
		for (int i = first; i < nfuncs; i++) {
			funcs[i]->obj.alive = 0;
		}
		free(p.t);
		free(m);
		emu_unlock();
		return p.code;
	}
	free(p.t);
	emu_register(&m->obj, OBJ_MODULE);
	*module = m;
	emu_unlock();
	return CUDA_SUCCESS;
}

static int module_ok(const char *fn, CUmodule m, struct CUctx_st **c, CUresult *r) {
	if ((*r = emu_need_ctx(fn, c)) != CUDA_SUCCESS) {
		return 0;
	}
	if (!emu_valid(m, OBJ_MODULE) || m->ctx != *c) {
		emu_report(fn, "%p is not a live module of the current context: CUDA_ERROR_INVALID_HANDLE", (void *)m);
		*r = CUDA_ERROR_INVALID_HANDLE;
		return 0;
	}
	return 1;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
	emu_lock();
	struct CUctx_st *c;
	CUresult r;
	if (!module_ok("cuModuleUnload", hmod, &c, &r)) {
		if (r == CUDA_ERROR_INVALID_HANDLE) {
			emu_misuse("cuModuleUnload", "unloading %p twice?", (void *)hmod);
		}
		emu_unlock();
		return r;
	}
	// Launches still queued run first.
	r = emu_sync_ctx(c, 0);
	hmod->obj.alive = 0;
	for (int i = 0; i < nfuncs; i++) {
		if (funcs[i]->mod == hmod) {
			funcs[i]->obj.alive = 0;
		}
	}
	emu_unlock();
	return r;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
	emu_lock();
	struct CUctx_st *c;
	CUresult r;
	if (!module_ok("cuModuleGetFunction", hmod, &c, &r)) {
		emu_unlock();
		return r;
	}
	if (hfunc == NULL || name == NULL) {
		emu_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < nfuncs; i++) {
		if (funcs[i]->mod == hmod && funcs[i]->obj.alive && strcmp(funcs[i]->name, name) == 0) {
			*hfunc = funcs[i];
			emu_unlock();
			return CUDA_SUCCESS;
		}
	}
	emu_report("cuModuleGetFunction", "the module has no kernel %s: CUDA_ERROR_NOT_FOUND", name);
	emu_unlock();
	return CUDA_ERROR_NOT_FOUND;
}

// ---- the interpreter ----

static inline uint64_t trunc_to(uint64_t v, int bits) { return bits >= 64 ? v : v & ((1ull << bits) - 1); }
static inline int64_t sext(uint64_t v, int bits) { return bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits); }
static inline float f32_of(uint64_t v) {
	uint32_t u = (uint32_t)v;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static inline double f64_of(uint64_t v) {
	double d;
	memcpy(&d, &v, 8);
	return d;
}
static inline uint64_t of_f32(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}
static inline uint64_t of_f64(double d) {
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
}

// imm returns an immediate's bits as a value of type t.
static uint64_t imm(const opnd *o, ptype t) {
	if (t.kind == 'f') {
		double v;
		switch (o->ikind) {
		case IMM_F32BITS:
			if (t.bits == 32) {
				return o->ival;
			}
			v = f32_of(o->ival);
			break;
		case IMM_F64BITS:
			if (t.bits == 64) {
				return o->ival;
			}
			v = f64_of(o->ival);
			break;
		case IMM_FLOAT:
			v = o->fval;
			break;
		default:
			v = (double)(int64_t)o->ival;
		}
		return t.bits == 32 ? of_f32((float)v) : of_f64(v);
	}
	return trunc_to(o->ival, t.bits);
}

typedef struct {
	uint64_t *r;
	uint64_t sreg[12];
	const unsigned char *args;
	struct CUfunc_st *f;
} thread;

static inline uint64_t val(const thread *th, const opnd *o, ptype t) {
	switch (o->k) {
	case O_REG:
		return th->r[o->reg];
	case O_SREG:
		return th->sreg[o->sreg];
	default:
		return imm(o, t);
	}
}

static int compare(int cmp, ptype t, uint64_t a, uint64_t b) {
	if (t.kind == 'f') {
		double x = t.bits == 32 ? f32_of(a) : f64_of(a), y = t.bits == 32 ? f32_of(b) : f64_of(b);
		int un = isnan(x) || isnan(y);
		switch (cmp) {
		case C_EQ: return !un && x == y;
		case C_NE: return !un && x != y;
		case C_LT: return !un && x < y;
		case C_LE: return !un && x <= y;
		case C_GT: return !un && x > y;
		case C_GE: return !un && x >= y;
		case C_EQU: return un || x == y;
		case C_NEU: return un || x != y;
		case C_LTU: return un || x < y;
		case C_LEU: return un || x <= y;
		case C_GTU: return un || x > y;
		case C_GEU: return un || x >= y;
		case C_NUM: return !un;
		default: return un;
		}
	}
	if (t.kind == 's') {
		int64_t x = sext(a, t.bits), y = sext(b, t.bits);
		switch (cmp) {
		case C_EQ: return x == y;
		case C_NE: return x != y;
		case C_LT: return x < y;
		case C_LE: return x <= y;
		case C_GT: return x > y;
		default: return x >= y;
		}
	}
	uint64_t x = trunc_to(a, t.bits), y = trunc_to(b, t.bits);
	switch (cmp) {
	case C_EQ: return x == y;
	case C_NE: return x != y;
	case C_LT: return x < y;
	case C_LE: return x <= y;
	case C_GT: return x > y;
	default: return x >= y;
	}
}

// arith computes a binary or unary operation of type t.
static uint64_t arith(int op, ptype t, uint64_t a, uint64_t b) {
	if (t.kind == 'f' && t.bits == 32) {
		float x = f32_of(a), y = f32_of(b), z = 0;
		switch (op) {
		case I_ADD: z = x + y; break;
		case I_SUB: z = x - y; break;
		case I_MUL: z = x * y; break;
		case I_DIV: z = x / y; break;
		case I_MIN: z = fminf(x, y); break;
		case I_MAX: z = fmaxf(x, y); break;
		case I_NEG: z = -x; break;
		case I_ABS: z = fabsf(x); break;
		case I_SQRT: z = sqrtf(x); break;
		}
		return of_f32(z);
	}
	if (t.kind == 'f') {
		double x = f64_of(a), y = f64_of(b), z = 0;
		switch (op) {
		case I_ADD: z = x + y; break;
		case I_SUB: z = x - y; break;
		case I_MUL: z = x * y; break;
		case I_DIV: z = x / y; break;
		case I_MIN: z = fmin(x, y); break;
		case I_MAX: z = fmax(x, y); break;
		case I_NEG: z = -x; break;
		case I_ABS: z = fabs(x); break;
		case I_SQRT: z = sqrt(x); break;
		}
		return of_f64(z);
	}
	int s = t.kind == 's';
	int64_t x = sext(a, t.bits), y = sext(b, t.bits);
	uint64_t ux = trunc_to(a, t.bits), uy = trunc_to(b, t.bits), z = 0;
	switch (op) {
	case I_ADD: z = ux + uy; break;
	case I_SUB: z = ux - uy; break;
	case I_MUL: z = ux * uy; break;
	case I_DIV: z = uy == 0 ? ~0ull : s ? (uint64_t)(x / y) : ux / uy; break; // x/0: all ones, no trap
	case I_REM: z = uy == 0 ? ux : s ? (uint64_t)(x % y) : ux % uy; break;
	case I_MIN: z = s ? (uint64_t)(x < y ? x : y) : (ux < uy ? ux : uy); break;
	case I_MAX: z = s ? (uint64_t)(x > y ? x : y) : (ux > uy ? ux : uy); break;
	case I_NEG: z = (uint64_t)(-x); break;
	case I_ABS: z = (uint64_t)(x < 0 ? -x : x); break;
	case I_AND: z = ux & uy; break;
	case I_OR: z = ux | uy; break;
	case I_XOR: z = ux ^ uy; break;
	case I_NOT: z = ~ux; break;
	}
	return trunc_to(z, t.bits);
}

static uint64_t convert(const insn *in, uint64_t v) {
	ptype d = in->t, s = in->t2;
	if (s.kind == 'f' && d.kind == 'f') {
		double x = s.bits == 32 ? f32_of(v) : f64_of(v);
		return d.bits == 32 ? of_f32((float)x) : of_f64(x); // (float) rounds to nearest
	}
	if (s.kind != 'f' && d.kind == 'f') {
		double x = s.kind == 's' ? (double)sext(v, s.bits) : (double)trunc_to(v, s.bits);
		if (s.bits == 64 && d.bits == 32) {
			// One rounding, not two.
			return of_f32(s.kind == 's' ? (float)sext(v, 64) : (float)v);
		}
		return d.bits == 32 ? of_f32((float)x) : of_f64(x);
	}
	if (s.kind == 'f') {
		double x = s.bits == 32 ? f32_of(v) : f64_of(v);
		switch (in->mode) {
		case R_RNI: x = nearbyint(x); break;
		case R_RZI: x = trunc(x); break;
		case R_RMI: x = floor(x); break;
		default: x = ceil(x); break;
		}
		// Saturating, NaN to 0, as PTX's float to integer conversions.
		if (isnan(x)) {
			return 0;
		}
		if (d.kind == 's') {
			double lo = -ldexp(1, d.bits - 1), hi = ldexp(1, d.bits - 1);
			int64_t r = x <= lo ? (int64_t)lo : x >= hi ? (d.bits == 64 ? INT64_MAX : (int64_t)hi - 1) : (int64_t)x;
			return trunc_to((uint64_t)r, d.bits);
		}
		double hi = ldexp(1, d.bits);
		uint64_t r = x <= 0 ? 0 : x >= hi ? (d.bits == 64 ? UINT64_MAX : (uint64_t)hi - 1) : (uint64_t)x;
		return r;
	}
	// Integer to integer: extend by the source's signedness, truncate.
	uint64_t x = s.kind == 's' ? (uint64_t)sext(v, s.bits) : trunc_to(v, s.bits);
	return trunc_to(x, d.bits);
}

// access returns the host address of a global load or store, or NULL
// after a sticky fault.
static void *mem_access(emu_op *op, const thread *th, const insn *in, uint64_t addr, int size, const unsigned *blk, const unsigned *thr) {
	void *h = emu_range(op->ctx, addr, (size_t)size);
	if (h == NULL) {
		char d[512];
		emu_describe(addr, (size_t)size, d, sizeof d);
		emu_fault(op->ctx, "cuLaunchKernel", "kernel %s, block (%u,%u,%u) thread (%u,%u,%u), PTX line %d '%s': %s", th->f->name, blk[0],
		          blk[1], blk[2], thr[0], thr[1], thr[2], in->line, in->text, d);
		return NULL;
	}
	if (addr % (uint64_t)size != 0) {
		emu_fault_as(op->ctx, CUDA_ERROR_MISALIGNED_ADDRESS, "cuLaunchKernel", "kernel %s, block (%u,%u,%u) thread (%u,%u,%u), PTX line %d '%s': %d bytes at %#llx are not aligned",
		             th->f->name, blk[0], blk[1], blk[2], thr[0], thr[1], thr[2], in->line, in->text, size, (unsigned long long)addr);
		return NULL;
	}
	return h;
}

static uint64_t load(const void *h, ptype t) {
	switch (t.bits) {
	case 8: {
		uint8_t v;
		memcpy(&v, h, 1);
		return t.kind == 's' ? (uint64_t)(int64_t)(int8_t)v : v;
	}
	case 16: {
		uint16_t v;
		memcpy(&v, h, 2);
		return t.kind == 's' ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	case 32: {
		uint32_t v;
		memcpy(&v, h, 4);
		return t.kind == 's' ? (uint64_t)(int64_t)(int32_t)v : v;
	}
	default: {
		uint64_t v;
		memcpy(&v, h, 8);
		return v;
	}
	}
}

#define STEP_LIMIT (1ull << 32)

static CUresult run_thread(emu_op *op, thread *th, const unsigned *blk, const unsigned *thr) {
	struct CUfunc_st *f = th->f;
	uint64_t *r = th->r;
	memset(r, 0xff, (size_t)f->nregs * sizeof *r); // unwritten registers: all ones
	uint64_t steps = 0;
	for (int pc = 0;;) {
		const insn *in = &f->code[pc++];
		if (++steps > STEP_LIMIT) {
			return emu_fault_as(op->ctx, CUDA_ERROR_LAUNCH_TIMEOUT, "cuLaunchKernel", "kernel %s, block (%u,%u,%u) thread (%u,%u,%u): no end after %llu instructions",
			                    f->name, blk[0], blk[1], blk[2], thr[0], thr[1], thr[2], (unsigned long long)STEP_LIMIT);
		}
		if (in->pred >= 0 && (int)(r[in->pred] & 1) == in->pneg) {
			continue;
		}
		const opnd *a = in->a;
		ptype t = in->t;
		uint64_t *d = a[0].k == O_REG ? &r[a[0].reg] : NULL;
		switch (in->op) {
		case I_LD:
			if (in->mode == S_PARAM) {
				const param *pr = &f->params[a[1].param];
				if (a[1].off < 0 || a[1].off + t.bits / 8 > pr->size) {
					return emu_fault(op->ctx, "cuLaunchKernel", "kernel %s, PTX line %d: ld.param past parameter %s", f->name, in->line, pr->name);
				}
				*d = load(th->args + pr->offset + a[1].off, t);
			} else {
				void *h = mem_access(op, th, in, r[a[1].reg] + (uint64_t)a[1].off, t.bits / 8, blk, thr);
				if (h == NULL) {
					return op->ctx->sticky;
				}
				*d = load(h, t);
			}
			break;
		case I_ST: {
			void *h = mem_access(op, th, in, r[a[0].reg] + (uint64_t)a[0].off, t.bits / 8, blk, thr);
			if (h == NULL) {
				return op->ctx->sticky;
			}
			uint64_t v = val(th, &a[1], t);
			memcpy(h, &v, (size_t)t.bits / 8); // little-endian: the low bytes
			break;
		}
		case I_CVTA:
		case I_MOV:
			*d = t.kind == 'p' ? val(th, &a[1], t) & 1 : trunc_to(val(th, &a[1], t), t.bits);
			break;
		case I_MUL:
		case I_MAD: {
			uint64_t x = val(th, &a[1], t), y = val(th, &a[2], t), z;
			if (t.kind == 'f') {
				z = arith(I_MUL, t, x, y);
				if (in->op == I_MAD) {
					double m = t.bits == 32 ? (double)fmaf(f32_of(x), f32_of(y), f32_of(val(th, &a[3], t)))
					                        : fma(f64_of(x), f64_of(y), f64_of(val(th, &a[3], t)));
					z = t.bits == 32 ? of_f32((float)m) : of_f64(m);
				}
			} else if (in->mode == M_WIDE) {
				ptype w = {t.kind, 2 * t.bits};
				z = t.kind == 's' ? (uint64_t)(sext(x, t.bits) * sext(y, t.bits)) : trunc_to(x, t.bits) * trunc_to(y, t.bits);
				if (in->op == I_MAD) {
					z += val(th, &a[3], w);
				}
				z = trunc_to(z, w.bits);
			} else if (in->mode == M_HI) {
				if (t.bits == 64) {
					z = t.kind == 's' ? (uint64_t)(((__int128)sext(x, 64) * sext(y, 64)) >> 64)
					                  : (uint64_t)(((unsigned __int128)x * y) >> 64);
				} else {
					z = t.kind == 's' ? (uint64_t)((sext(x, t.bits) * sext(y, t.bits)) >> t.bits)
					                  : (trunc_to(x, t.bits) * trunc_to(y, t.bits)) >> t.bits;
				}
				if (in->op == I_MAD) {
					z += val(th, &a[3], t);
				}
				z = trunc_to(z, t.bits);
			} else {
				z = arith(I_MUL, t, x, y);
				if (in->op == I_MAD) {
					z = trunc_to(z + val(th, &a[3], t), t.bits);
				}
			}
			*d = z;
			break;
		}
		case I_FMA:
			*d = t.bits == 32 ? of_f32(fmaf(f32_of(val(th, &a[1], t)), f32_of(val(th, &a[2], t)), f32_of(val(th, &a[3], t))))
			                  : of_f64(fma(f64_of(val(th, &a[1], t)), f64_of(val(th, &a[2], t)), f64_of(val(th, &a[3], t))));
			break;
		case I_ADD:
		case I_SUB:
		case I_DIV:
		case I_REM:
		case I_MIN:
		case I_MAX:
		case I_AND:
		case I_OR:
		case I_XOR:
			if (t.kind == 'p') {
				uint64_t x = val(th, &a[1], t) & 1, y = val(th, &a[2], t) & 1;
				*d = in->op == I_AND ? x & y : in->op == I_OR ? x | y : x ^ y;
			} else {
				*d = arith(in->op, t, val(th, &a[1], t), val(th, &a[2], t));
			}
			break;
		case I_NEG:
		case I_ABS:
		case I_SQRT:
		case I_NOT:
			*d = t.kind == 'p' ? (~val(th, &a[1], t)) & 1 : arith(in->op, t, val(th, &a[1], t), 0);
			break;
		case I_SHL:
		case I_SHR: {
			uint64_t x = val(th, &a[1], t), n = trunc_to(val(th, &a[2], (ptype){'u', 32}), 32);
			if (in->op == I_SHL) {
				*d = n >= (uint64_t)t.bits ? 0 : trunc_to(x << n, t.bits);
			} else if (t.kind == 's') {
				*d = trunc_to((uint64_t)(sext(x, t.bits) >> (n >= (uint64_t)t.bits ? t.bits - 1 : (int)n)), t.bits);
			} else {
				*d = n >= (uint64_t)t.bits ? 0 : trunc_to(x, t.bits) >> n;
			}
			break;
		}
		case I_SETP:
			*d = (uint64_t)compare(in->mode, t, val(th, &a[1], t), val(th, &a[2], t));
			break;
		case I_SELP:
			*d = (val(th, &a[3], (ptype){'p', 1}) & 1) ? val(th, &a[1], t) : val(th, &a[2], t);
			break;
		case I_CVT:
			*d = convert(in, val(th, &a[1], in->t2));
			break;
		case I_BRA:
			pc = a[0].label;
			break;
		case I_RET:
			return CUDA_SUCCESS;
		}
	}
}

static CUresult run_kernel(emu_op *op) {
	struct CUfunc_st *f = op->func;
	thread th = {.args = op->args, .f = f};
	th.r = malloc(((size_t)f->nregs + 1) * sizeof *th.r);
	if (th.r == NULL) {
		abort();
	}
	const unsigned *g = op->dim, *b = op->dim + 3;
	for (int i = 0; i < 3; i++) {
		th.sreg[3 + i] = b[i];
		th.sreg[9 + i] = g[i];
	}
	CUresult res = CUDA_SUCCESS;
	unsigned blk[3], thr[3];
	for (blk[2] = 0; blk[2] < g[2] && res == CUDA_SUCCESS; blk[2]++) {
		for (blk[1] = 0; blk[1] < g[1] && res == CUDA_SUCCESS; blk[1]++) {
			for (blk[0] = 0; blk[0] < g[0] && res == CUDA_SUCCESS; blk[0]++) {
				for (thr[2] = 0; thr[2] < b[2] && res == CUDA_SUCCESS; thr[2]++) {
					for (thr[1] = 0; thr[1] < b[1] && res == CUDA_SUCCESS; thr[1]++) {
						for (thr[0] = 0; thr[0] < b[0] && res == CUDA_SUCCESS; thr[0]++) {
							for (int i = 0; i < 3; i++) {
								th.sreg[i] = thr[i];
								th.sreg[6 + i] = blk[i];
							}
							res = run_thread(op, &th, blk, thr);
						}
					}
				}
			}
		}
	}
	free(th.r);
	return res;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra) {
	const char *fn = "cuLaunchKernel";
	emu_lock();
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult r = emu_need_ctx(fn, &c);
	if (r == CUDA_SUCCESS) {
		r = emu_stream(fn, c, hStream, &s);
	}
	if (r != CUDA_SUCCESS) {
		emu_unlock();
		return r;
	}
	if (!emu_valid(f, OBJ_FUNC) || !f->mod->obj.alive || f->mod->ctx != c) {
		emu_report(fn, "%p is not a kernel of a module loaded in the current context: CUDA_ERROR_INVALID_HANDLE", (void *)f);
		emu_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	unsigned long long threads = (unsigned long long)blockDimX * blockDimY * blockDimZ;
	if (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0 || gridDimX > 0x7fffffffu || gridDimY > 65535 || gridDimZ > 65535 ||
	    blockDimX == 0 || blockDimY == 0 || blockDimZ == 0 || blockDimX > 1024 || blockDimY > 1024 || blockDimZ > 64 || threads > 1024) {
		emu_report(fn, "kernel %s: grid (%u,%u,%u), block (%u,%u,%u): out of the device's limits: CUDA_ERROR_INVALID_VALUE", f->name,
		           gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ);
		emu_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (sharedMemBytes != 0 || extra != NULL) {
		emu_report(fn, "kernel %s: dynamic shared memory and 'extra' parameters are not emulated: CUDA_ERROR_NOT_SUPPORTED", f->name);
		emu_unlock();
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (f->nparams > 0 && kernelParams == NULL) {
		emu_report(fn, "kernel %s takes %d parameters, kernelParams is NULL: CUDA_ERROR_INVALID_VALUE", f->name, f->nparams);
		emu_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	emu_op op = {.kind = OP_KERNEL, .fn = fn, .run = run_kernel, .func = f,
	             .dim = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ}};
	for (int i = 0; i < f->nparams; i++) {
		// The values are read now: the caller's may change after.
		memcpy(op.args + f->params[i].offset, kernelParams[i], (size_t)f->params[i].size);
	}
	emu_enqueue(s, &op);
	emu_unlock();
	return CUDA_SUCCESS;
}
