import yaml, re, sys
path = '.venv/lib/python3.11/site-packages/torchgen/packaged/ATen/native/native_functions.yaml'
entries = yaml.load(open(path), Loader=yaml.CSafeLoader)
by_name = {}
for e in entries:
    by_name[e['func'].split('(')[0]] = e
def has_cpu(e, depth=0):
    if 'ufunc_inner_loop' in e: return True
    d = e.get('dispatch')
    if d:
        for k in d:
            keys = [x.strip() for x in k.split(',')]
            if 'CPU' in keys: return True
    if 'structured_delegate' in e and depth < 2:
        return has_cpu(by_name[e['structured_delegate']], depth+1)
    return False
bases = sys.argv[1].split()
hand = set(sys.argv[2].split())
out = []
for name, e in by_name.items():
    base = name.split('.')[0]
    if (base not in bases and base.rstrip('_') not in bases) or name in hand: continue
    func = e['func']
    ret = func.split('->')[1]
    if re.search(r'Tensor\([a-z]\)(?!!)', ret):  # view returns
        continue
    if has_cpu(e):
        out.append(name)
print(len(out), file=sys.stderr)
print('\n'.join(sorted(out)))
