#!/usr/bin/env python3
"""Compiles a Halide kernel's LLVM IR with streaming (non-temporal) stores to its output buffers.

    streaming_stores.py --llc LLC --buffer y kernel-<target>.ll kernel-<target>.o

Halide 14 has no way to ask for non-temporal stores. A kernel that writes an output far larger than
the caches writes it faster with them: a plain store first reads the line it writes. This marks, in
the IR Halide emits (`-e llvm_assembly`), every vector store into the named buffers (Halide tags
each access with the buffer's name as TBAA metadata) whose alignment is the vector's size (where
Halide proved it: the generator sets the output's host alignment), puts an `sfence` before each
return of a function that has such stores (streaming stores are weakly ordered; the caller's thread
must see them once the task is done), and compiles the module with llc for the CPU and features
Halide recorded in its module flags, as Halide itself would have. docs/performance-notes.md (tenth
session) has the measurements.
"""
import argparse
import re
import subprocess
import sys

STORE = re.compile(r"^(\s*store <(\d+) x (float|double)> [^,]+, <\d+ x (?:float|double)>\* [^,]+, align (\d+)), "
                   r"!tbaa !(\d+)$")
TYPE_BYTES = {"float": 4, "double": 8}


def module_flag(text, name):
    m = re.search(r'!\{i32 \d+, !"' + re.escape(name) + r'", (?:!"([^"]*)"|i32 (\d+))\}', text)
    if not m:
        sys.exit(f"streaming_stores: the module has no flag {name}")
    return m.group(1) if m.group(1) is not None else int(m.group(2))


def buffer_tags(text, buffers):
    """The TBAA access tags of the named buffers (a buffer's node is `name` or `name$N`, and nodes
    Halide nests under it for aligned vector accesses)."""
    names = {int(n): name for n, name in re.findall(r'^!(\d+) = !\{!"([^"]+)", !\d+, i64 0\}$', text, re.M)}
    parents = {int(n): int(p) for n, p in re.findall(r'^!(\d+) = !\{!"[^"]+", !(\d+), i64 0\}$', text, re.M)}

    def of_buffer(node):
        while node in names:
            if re.fullmatch(r"(%s)(\$\d+)?" % "|".join(map(re.escape, buffers)), names[node]):
                return True
            node = parents.get(node)
        return False

    return {int(tag) for tag, node in re.findall(r"^!(\d+) = !\{!(\d+), !\d+, i64 \d+\}$", text, re.M)
            if of_buffer(int(node))}


def mark(text, buffers):
    tags = buffer_tags(text, buffers)
    node = 1 + max(int(n) for n in re.findall(r"^!(\d+) = ", text, re.M))
    out, marked, in_function, function_marked, body = [], 0, False, False, []
    for line in text.split("\n"):
        if line.startswith("define "):
            in_function, function_marked, body = True, False, [line]
            continue
        if not in_function:
            out.append(line)
            continue
        m = STORE.match(line)
        if m and int(m.group(5)) in tags and int(m.group(4)) >= int(m.group(2)) * TYPE_BYTES[m.group(3)]:
            line = f"{m.group(1)}, !tbaa !{m.group(5)}, !nontemporal !{node}"
            marked += 1
            function_marked = True
        body.append(line)
        if line == "}":
            if function_marked:
                body = [f"  call void @llvm.x86.sse.sfence()\n{b}" if b.lstrip().startswith("ret ") else b
                        for b in body]
            out.extend(body)
            in_function = False
    out.append("declare void @llvm.x86.sse.sfence()")
    out.append(f"!{node} = !{{i32 1}}")
    return "\n".join(out) + "\n", marked


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llc", required=True, help="LLVM's llc, of the LLVM Halide was built with")
    parser.add_argument("--buffer", action="append", required=True, help="an output buffer to stream (repeatable)")
    parser.add_argument("ir", help="the kernel's LLVM IR (.ll) for one target")
    parser.add_argument("object", help="the object file to write")
    args = parser.parse_args()
    with open(args.ir) as f:
        text = f.read()
    marked_text, marked = mark(text, args.buffer)
    if not marked:
        sys.exit(f"streaming_stores: {args.ir}: no vector store into {', '.join(args.buffer)} aligned to its "
                 "size (does the generator set the output's host alignment under streaming_output?)")
    llc = [args.llc, "-O3", "-filetype=obj", "-o", args.object, "-mcpu=" + module_flag(text, "halide_mcpu")]
    if module_flag(text, "halide_mattrs"):
        llc.append("-mattr=" + module_flag(text, "halide_mattrs"))
    if module_flag(text, "halide_use_pic"):
        llc.append("-relocation-model=pic")
    if module_flag(text, "halide_use_large_code_model"):
        llc.append("-code-model=large")
    if not module_flag(text, "halide_per_instruction_fast_math_flags"):
        # Halide's target options for a module without strict_float: fast math throughout.
        llc += ["--enable-unsafe-fp-math", "--enable-no-infs-fp-math", "--enable-no-nans-fp-math", "--fp-contract=fast"]
    subprocess.run(llc + ["-"], input=marked_text, text=True, check=True)


if __name__ == "__main__":
    main()
