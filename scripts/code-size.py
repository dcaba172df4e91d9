#!/usr/bin/env python3
"""Reports C++ files over a line limit and functions over a length limit.

Functions are found the way LLVM-style code lays them out: a line that
closes a signature with `{` (or a `{` line after one) opens a function
body, which ends at its matching `}`. Lambdas and nested classes count
towards the function that holds them. Exit status 1 when anything is
over a limit, so the check can run as a test.
"""
import argparse
import os
import re
import sys

CONTROL = re.compile(r'^\s*(}\s*)?(if|for|while|switch|else|do|catch|try|return)\b')
TYPE_DECL = re.compile(r'^\s*(template\s*<.*>\s*)?(struct|class|union|enum|namespace|extern)\b')


def strip(line):
    """Drops comments and string/char literals (keeps braces honest)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split('//')[0]


def functions(lines):
    """Yields (name, first line, length) of top-level function bodies."""
    code = [strip(l) for l in lines]
    # Block comments.
    in_comment = False
    for i, l in enumerate(code):
        out, k = '', 0
        while k < len(l):
            if in_comment:
                end = l.find('*/', k)
                if end < 0:
                    k = len(l)
                    break
                in_comment, k = False, end + 2
            else:
                start = l.find('/*', k)
                if start < 0:
                    out += l[k:]
                    break
                out += l[k:start]
                in_comment, k = True, start + 2
        code[i] = out
    # Preprocessor lines (and their continuations) are not code.
    in_directive = False
    for i, l in enumerate(code):
        if in_directive or l.lstrip().startswith('#'):
            in_directive = l.rstrip().endswith('\\')
            code[i] = ''

    i, n = 0, len(code)
    depth_stack = []  # kinds of open braces: 'type' or 'block'
    while i < n:
        line = code[i]
        # A function opens where a signature ends in `{` outside any
        # function: the text since the previous `;`, `}` or `{` has a `(`.
        if line.rstrip().endswith('{') and 'block' not in depth_stack:
            j, sig = i, line
            while j > 0 and not re.search(r'[;{}]\s*$', code[j - 1]) and \
                    not code[j - 1].strip().startswith('#') and i - j < 12:
                j -= 1
                sig = code[j] + ' ' + sig
            head = sig.strip()
            is_fn = ('(' in head and not CONTROL.match(head) and
                     not TYPE_DECL.match(head) and '=' not in head.split('(')[0])
            if is_fn:
                depth, k = 0, i
                while k < n:
                    depth += code[k].count('{') - code[k].count('}')
                    if depth <= 0:
                        break
                    k += 1
                name = re.sub(r'\s+', ' ', head.split('(')[0]).split(' ')[-1]
                yield name, j + 1, k - j + 1
                i = k + 1
                continue
        for ch in line:
            if ch == '{':
                depth_stack.append('type')
            elif ch == '}' and depth_stack:
                depth_stack.pop()
        i += 1


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('dirs', nargs='+')
    p.add_argument('--max-file', type=int, default=1000)
    p.add_argument('--max-function', type=int, default=150)
    p.add_argument('--list', type=int, default=0,
                   help='also list the N longest functions')
    args = p.parse_args()
    over, all_fns = [], []
    for d in args.dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if not f.endswith(('.cpp', '.h', '.c')):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    lines = fh.read().split('\n')
                if len(lines) > args.max_file:
                    over.append(f'{path}: {len(lines)} lines (limit {args.max_file})')
                for name, first, length in functions(lines):
                    all_fns.append((length, f'{path}:{first}', name))
                    if length > args.max_function:
                        over.append(f'{path}:{first}: function {name} is {length} '
                                    f'lines (limit {args.max_function})')
    for length, where, name in sorted(all_fns, reverse=True)[:args.list]:
        print(f'{length:5} {where} {name}')
    for o in over:
        print(o)
    print(f'code-size: {len(all_fns)} functions, {len(over)} over the limits')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
