#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen-man3.py - section 3 manual pages from the kernel-doc of include/accdma.h.

  gen-man3.py [--check] [HEADER] [OUTDIR]      (defaults: include/accdma.h man/man3)

Writes one page per family of public functions (FAMILIES below) and a one-line
`.so` page for every other name in the family, so `man 3 NAME` works for every
function. The synopsis is each function's prototype as the header declares it,
the description its kernel-doc. --check writes nothing: it fails (exit 1) if a
function declared in the header belongs to no family, a family names a function
the header does not declare, or any page in OUTDIR differs from what the header
gives now (run `make man` to regenerate). `make check` runs it, so a page cannot
drift from the header.
"""
import os
import re
import sys

# page name, the functions it documents (the first names the page), the
# structures and enums shown with them, and a one-line summary for NAME.
FAMILIES = [
    ("accdma_world_open", ["accdma_world_opts_init", "accdma_world_open", "accdma_world_close",
                           "accdma_world_size", "accdma_world_local_devices"],
     ["accdma_world_opts", "accdma_transport"], "open and close a world of devices"),
    ("accdma_device_info", ["accdma_device_info", "accdma_device_health", "accdma_device_reset"],
     ["accdma_device_info", "accdma_device_health"], "ask a device's mailbox; reset a device"),
    ("accdma_mem_alloc", ["accdma_mem_alloc", "accdma_mem_register", "accdma_mem_free",
                          "accdma_mem_ptr"], [], "device memory regions"),
    ("accdma_queue_get", ["accdma_queue_get", "accdma_queue_stats"], ["accdma_queue_stats"],
     "a device's queues and their counters"),
    ("accdma_post", ["accdma_post"], ["accdma_op", "accdma_op_kind"],
     "post several descriptors with one doorbell"),
    ("accdma_send", ["accdma_send", "accdma_recv"], [], "two-sided transfers matched by tag"),
    ("accdma_write", ["accdma_write"], [], "one-sided write into a peer's region"),
    ("accdma_fence", ["accdma_fence", "accdma_after_all", "accdma_exec"], [],
     "ordering ops on a device: fences, joins and compute steps"),
    ("accdma_barrier", ["accdma_barrier", "accdma_permute"], ["accdma_pair"],
     "collectives built on send and recv"),
    ("accdma_wait", ["accdma_wait", "accdma_wait_bytes", "accdma_wait_source", "accdma_test", "accdma_wait_all", "accdma_wait_any",
                     "accdma_release", "accdma_cancel"], ["accdma_status"],
     "wait for, test, release and cancel ops by token"),
    ("accdma_op_info", ["accdma_op_info", "accdma_pending", "accdma_op_describe",
                        "accdma_find_cycle", "accdma_stall_report"],
     ["accdma_op_info", "accdma_op_stage"], "diagnose pending and stuck ops"),
    ("accdma_status_str", ["accdma_status_str", "accdma_op_kind_str", "accdma_op_stage_str"], [],
     "names of statuses, op kinds and stages"),
]


def version(root):
    try:
        with open(os.path.join(root, "Makefile")) as f:
            m = re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M)
            return m.group(1) if m else "0"
    except OSError:
        return "0"


def parse(text):
    """Kernel-doc blocks and the declaration after each: {name: (kind, doc lines, decl)}."""
    out = {}
    for m in re.finditer(r"/\*\*(.*?)\*/\s*((?:(?!/\*|#)[^;{])*(?:\{.*?\}\s*)?;)", text, re.S):
        doc, decl = m.group(1), m.group(2).strip()
        lines = [re.sub(r"^\s*\* ?", "", l) for l in doc.split("\n")]
        lines = [l.rstrip() for l in lines]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        fm = re.match(r"^(?:[\w\s\*]+?)\b(accdma_\w+)\s*\(", decl)
        sm = re.match(r"^(struct|enum)\s+(accdma_\w+)\s*\{", decl)
        if fm and not decl.startswith(("struct", "enum", "typedef")):
            out[fm.group(1)] = ("func", lines, decl)
        elif sm:
            out[sm.group(2)] = (sm.group(1), lines, decl)
    return out


def declared_functions(text):
    """Every public function the header declares, documented or not."""
    body = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    names = set()
    for m in re.finditer(r"^[A-Za-z][\w\s\*]*?\b(accdma_\w+)\s*\([^;{]*\)\s*;", body, re.M | re.S):
        names.add(m.group(1))
    return names


def esc(s):
    s = s.replace("\\", "\\e")
    s = re.sub(r"\b(accdma_\w+)\(\)", r"\\fB\1\\fP()", s)
    s = re.sub(r"@(\w+)", r"\\fI\1\\fP", s)
    return s


def para(lines):
    """Roff text for lines of prose; a line starting with '.' or "'" is protected."""
    out = []
    for l in lines:
        l = esc(l.strip())
        if l.startswith((".", "'")):
            l = "\\&" + l
        out.append(l)
    return out


def split_doc(lines):
    """(summary, [(names, text)], body lines, return lines) of a kernel-doc block."""
    first = lines[0]
    summary = first.split(" - ", 1)[1] if " - " in first else first
    i = 1
    while i < len(lines) and lines[i].strip() and not lines[i].startswith("@") \
            and not lines[i].startswith("Return:"):
        summary += " " + lines[i].strip()  # the summary's own continuation
        i += 1
    params, body, ret = [], [], []
    while i < len(lines) and lines[i].startswith("@"):
        text = lines[i]
        i += 1
        while i < len(lines) and lines[i][:1] in (" ", "\t") and lines[i].strip():
            text += " " + lines[i].strip()
            i += 1
        for pm in re.finditer(r"(@[\w/@, ]*?):\s+(.*?)(?=\s@[\w/@, ]*?:\s|$)", text):
            names = pm.group(1).replace("@", "")
            params.append((names, pm.group(2).strip()))
    where = body
    for l in lines[i:]:
        if l.startswith("Return:"):
            where = ret
            l = l[len("Return:"):]
        where.append(l)
    return summary, params, body, ret


def paragraphs(lines):
    out, cur = [], []
    for l in lines:
        if l.strip():
            cur.append(l)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def page(name, funcs, types, what, docs, ver):
    r = ['.\\" Generated by man/gen-man3.py from include/accdma.h: do not edit.',
         '.TH %s 3 "" "accdma %s" "accdma Programmer\'s Manual"' % (name.upper(), ver),
         ".SH NAME", "%s \\- %s" % (", ".join(funcs), what),
         ".SH SYNOPSIS", ".nf", ".B #include <accdma.h>", ".PP"]
    for t in types:
        r += [esc(l) if l.strip() else "" for l in docs[t][2].split("\n")]
        r.append(".PP")
    for f in funcs:
        decl = [l.strip() for l in docs[f][2].split("\n")]
        decl = "\n".join([decl[0]] + ["        " + l for l in decl[1:]])
        r += esc(decl).replace(f + "(", "\\fB" + f + "\\fP(", 1).split("\n")
    r += [".fi", ".PP", "Link with \\fI\\-laccdma\\fP (\\fBpkg\\-config \\-\\-libs accdma\\fP).",
          ".SH DESCRIPTION"]
    rets = []
    for f in funcs:
        summary, params, body, ret = split_doc(docs[f][1])
        r += [".SS \\fB%s\\fP()" % f] + para([summary[:1].upper() + summary[1:]])
        for names, text in params:
            r += [".TP", "\\fI%s\\fP" % esc(names)] + para([text])
        for p in paragraphs(body):
            r += [".PP"] + para(p)
        if ret:
            rets.append((f, ret))
    if types:
        r.append(".SH STRUCTURES AND CONSTANTS")
        for t in types:
            kind, lines, _ = docs[t]
            summary, params, body, _ = split_doc(lines)
            r += [".SS %s %s" % (kind, t)] + para([summary[:1].upper() + summary[1:]])
            for names, text in params:
                r += [".TP", "\\fI%s\\fP" % esc(names)] + para([text])
            for p in paragraphs(body):
                r += [".PP"] + para(p)
    r.append(".SH RETURN VALUE")
    for f, ret in rets:
        r += [".TP", "\\fB%s\\fP()" % f] + para([" ".join(l.strip() for l in ret if l.strip())])
    others = sorted({p for p, _, _, _ in FAMILIES} - {name})
    r += [".SH SEE ALSO", ",\n".join("\\fB%s\\fP(3)" % o for o in others) + ",",
          "\\fBaccdma\\-run\\fP(1), \\fBaccdma\\-bw\\fP(1), \\fBqueue\\-tester\\fP(1)"]
    return "\n".join(r) + "\n"


def pages(header, root):
    with open(header) as f:
        text = f.read()
    docs = parse(text)
    ver = version(root)
    errors, out = [], {}
    listed = [f for _, fs, _, _ in FAMILIES for f in fs]
    for f in sorted(declared_functions(text)):
        if f not in listed:
            errors.append("%s: declared in %s but on no manual page (add it to FAMILIES in "
                          "man/gen-man3.py)" % (f, header))
        elif f not in docs:
            errors.append("%s: declared without a kernel-doc comment" % f)
    for name, funcs, types, what in FAMILIES:
        missing = [x for x in funcs + types if x not in docs]
        if missing:
            errors.append("page %s names %s, which %s does not declare with kernel-doc"
                          % (name, ", ".join(missing), header))
            continue
        out[name + ".3"] = page(name, funcs, types, what, docs, ver)
        for f in funcs:
            if f != name:
                out[f + ".3"] = ".so man3/%s.3\n" % name
    return out, errors


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    header = args[0] if args else "include/accdma.h"
    outdir = args[1] if len(args) > 1 else "man/man3"
    root = os.path.dirname(os.path.dirname(os.path.abspath(header)))
    out, errors = pages(header, root)
    if not check:
        os.makedirs(outdir, exist_ok=True)
    for fname, content in sorted(out.items()):
        path = os.path.join(outdir, fname)
        if check:
            try:
                with open(path) as f:
                    old = f.read()
            except OSError:
                old = None
            if old != content:
                errors.append("%s: %s what %s gives (run `make man`)"
                              % (path, "missing, not" if old is None else "differs from", header))
        else:
            with open(path, "w") as f:
                f.write(content)
    if check and os.path.isdir(outdir):
        for fname in sorted(os.listdir(outdir)):
            if fname.endswith(".3") and fname not in out:
                errors.append("%s: a page for no function of %s (stale: remove it)"
                              % (os.path.join(outdir, fname), header))
    for e in errors:
        print("gen-man3: " + e, file=sys.stderr)
    if not errors and check:
        print("gen-man3: %d pages match %s" % (len(out), header))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
