#!/usr/bin/env python3
"""Writes the seed corpora of the handler fuzz targets (testdata/fuzz/<Target>/
in each family's package). Run from the repository root:

    python3 infra/fuzzkit/testdata/seeds.py

Each seed is (route index, query, body) in Go's corpus file format. The
fuzzer's own finds stay in its cache; only seeds and fixed regressions are
kept here.
"""
import io, json, os, tarfile, gzip, zipfile, bz2

def gostr(b):
    if isinstance(b, str):
        b = b.encode()
    out = []
    for c in b:
        ch = chr(c)
        if ch == '"': out.append('\\"')
        elif ch == '\\': out.append('\\\\')
        elif 32 <= c < 127: out.append(ch)
        else: out.append('\\x%02x' % c)
    return '"' + ''.join(out) + '"'

def write(pkg, target, seeds):
    d = os.path.join(pkg, 'testdata', 'fuzz', target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith('seed-'):
            os.remove(os.path.join(d, f))
    for i, vals in enumerate(seeds):
        lines = ['go test fuzz v1']
        for v in vals:
            if isinstance(v, int): lines.append('uint8(%d)' % v)
            elif isinstance(v, tuple) and v[0] == 's': lines.append('string(%s)' % gostr(v[1]))
            else: lines.append('[]byte(%s)' % gostr(v))
        with open(os.path.join(d, 'seed-%03d' % i), 'w') as fh:
            fh.write('\n'.join(lines) + '\n')

JUNK = [b'', b'{}', b'null', b'[]', b'"x"', b'{"name": 1}', b'{"name": "x", "name": "y"}',
        b'{"account": "/v2/accounts/x", "parent": "/v2/accounts/x", "state": "running", "control": true, "href": "/v2/x"}',
        b'[' * 5000 + b']' * 5000, b'{"name": "\\u0000\\ud800"}', b'{"quantity": 1e400, "unit_price": -1}',
        b'\xff\xfe\x00', b'{"name": "' + b'a' * 70000 + b'"}']
PATCHES = [b'[{"op": "replace", "path": "/name", "value": "x"}]', b'[{"op": "add", "path": "/-", "value": 1}]',
           b'[{"op": "move", "from": "/name", "path": "/name/x"}]', b'[{"op": "test", "path": "/a~2", "value": null}]',
           b'[{"op": "remove", "path": ""}]', b'[{"op": "replace", "path": "/id", "value": "zz"}]',
           b'[{"op": "replace", "path": "/state", "value": "deleted"}]', b'[{"op": "copy", "from": "/aliases", "path": "/aliases/0"}]',
           b'{"name": "merged", "description": null}']
QUERIES = ['', 'limit=0', 'limit=1000&start=2147483647', 'start=-1', 'order=-name,+created', 'order=', 'order=,,',
           'limit=1e3', 'start=1&start=2', '%zz', 'names=requests&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&resolution=60',
           'summarize=true&resolution=60', 'from=0&to=-1', 'type=custom']

def family(pkg, target, routes):
    """routes: list of (valid bodies, is patch route)."""
    seeds = []
    for i, (valid, patch) in enumerate(routes):
        for b in valid:
            seeds.append((i, ('s', ''), b))
        for b in (PATCHES if patch else JUNK[:8]):
            seeds.append((i, ('s', ''), b))
    for b in JUNK:
        seeds.append((0, ('s', ''), b))
    for i in range(len(routes)):
        for q in QUERIES:
            seeds.append((i, ('s', q), b''))
    write(pkg, target, seeds)

R = '{{root}}'
family('shared/accounts', 'FuzzAccounts', [
    ([b'{"name": "seed customer"}', ('{"name": "seed child", "parent": "/v2/accounts/%s"}' % R).encode()], False),
    ([], True), ([b'{"name": "x"}'], False),
    ([b'{"resource": "applications", "quantity": 10, "unit_price": 25}', b'{"resource": "nonsense", "quantity": -5}'], False),
    ([b'[{"op": "replace", "path": "/quantity", "value": 20}]'], True), ([], False), ([], False), ([], False)])
family('shared/roles', 'FuzzRoles', [
    ([b'{"name": "Maintainer", "permissions": [{"method": "PATCH", "effect": "permit", "spec": ["/v2/applications/*"]}]}',
      b'{"name": "X", "permissions": [{"method": "*", "effect": "permit", "spec": ["/v2/**/x", "/v2/a*b", "/v2/../x", "/v2//x"]}]}'], False),
    ([b'{"name": "Operators", "roles": []}', ('{"name": "G", "roles": ["/v2/accounts/%s/roles/nosuch"]}' % R).encode()], False),
    ([b'{"name": "robot"}', b'{"name": "robot", "roles": ["x"]}'], False),
    ([b'{"user_email": "dev@example.com", "role": "/v2/accounts/elsewhere/roles/r1"}', b'{"user_email": "not an email"}'], False),
    ([b'{"user_email": "dev@example.com", "group": "/v2/accounts/x/groups/g"}'], False),
    ([b'[{"op": "add", "path": "/permissions/-", "value": {"method": "GET", "effect": "deny", "spec": ["/v2/**"]}}]'], True),
    ([b'[{"op": "replace", "path": "/roles", "value": []}]'], True), ([], True),
    ([b'{}', b'{"resend": true}'], False), ([b'{}'], False),
    ([b'{"state": "accepted"}', b'{"state": "declined"}', b'{"state": "pending"}'], False),
    ([b'{"state": "accepted"}'], False),
    ([], False), ([], False), ([], False), ([], False), ([], False)])
family('shared/users', 'FuzzUsers', [
    ([b'{"email": "newcomer@example.com", "name": "New Comer"}', b'{"email": "x@example.com", "account": "/v2/accounts/a1"}'], False),
    ([b'[{"op": "replace", "path": "/name", "value": "Renamed"}]'], True), ([b'{"name": "x"}'], False),
    ([b'{}', b'{"description": "ci key"}', b'{"expires": "2020-01-01T00:00:00Z"}'], False),
    ([('{"account": "/v2/accounts/%s"}' % R).encode(), b'{"account": "/v2/accounts/nosuch"}', b'{"account": null}'], False),
    ([], False), ([], False), ([], False)])
family('shared/applications', 'FuzzApplications', [
    ([b'{"name": "Shop", "aliases": ["shop.example.com", "www.shop.example.com"], "request_timeout": 20}',
      b'{"name": "Shop", "aliases": ["*.example.com", "EXAMPLE.com.", "a..b"], "request_timeout": -1}'], False),
    ([b'[{"op": "replace", "path": "/name", "value": "x"}]', b'[{"op": "add", "path": "/aliases/-", "value": "y.example.com"}]'], True),
    ([b'{"name": "a1", "type": "redirect"}', b'{"url": "http://127.0.0.1:1/"}'], False),
    ([b'{"name": "p1"}'], False), ([], False), ([], False), ([], False)])
family('shared/tasks', 'FuzzTasks', [
    ([b'{"type": "start", "target": "/v2/applications/{{app}}"}', b'{"type": "stop", "target": "/v2/applications/{{app}}"}',
      b'{"type": "reboot", "target": "/v2/applications/x"}',
      b'{"type": "generate-origin-certificate", "parameters": {"key": "-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----\\n"}}'], False),
    ([], False)])
family('shared/addresssets', 'FuzzAddressSets', [
    ([b'{"name": "office exits", "type": "manual", "entries": [{"address": "192.0.2.0/24", "description": "HQ"}, {"address": "2001:db8::/32"}]}',
      b'{"name": "all", "type": "combined", "inclusions": ["/v2/address-sets/{{set}}"]}',
      b'{"name": "typo", "type": "manual", "entries": [{"address": "10.0.0.1/8"}, {"address": "::ffff:1.2.3.4/200"}, {"address": "1.2.3.4", "expires": "1970-01-01T00:00:00Z"}]}'], False),
    ([b'[{"op": "add", "path": "/entries/-", "value": {"address": "203.0.113.7"}}]', b'[{"op": "remove", "path": "/entries/0"}]'], True),
    ([b'{"entries": [{"address": "198.51.100.1"}]}', b'{"name": null}'], True), ([], False), ([], False)])
family('shared/metrics', 'FuzzMetricsQuery', [([], False), ([], False), ([], False)])

def tgz(files, comp='gz'):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w') as t:
        for name, data in files:
            ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    return {'gz': gzip.compress(raw, mtime=0), 'bz2': bz2.compress(raw), 'tar': raw}[comp]

def zipb(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        for name, data in files:
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()

CONF = json.dumps({"probabilities": 1, "models": {"home": {"type": "user.StaticSession", "requests": [{"name": "home", "method": "GET", "url": "http://127.0.0.1:8080/"}]}}}).encode()
SESS = json.dumps({"probabilities": 1, "models": {"s": {"type": "user.Session", "file": "sessions/s.json"}}}).encode()
files = [('test.json', CONF)]
evil = [('../../etc/passwd', b'x'), ('test.json', SESS), ('sessions/s.json', b'{"requests": [1]}'), ('test.json', b'{}')]
# MediaTypes order: json, tar, zip, tar+gzip, tar+bzip2, bzip2, gzip.
archives = [(0, CONF), (0, SESS), (1, tgz(files, 'tar')), (1, tgz(evil, 'tar')), (2, zipb(files)), (2, zipb(evil)),
            (3, tgz(files)), (3, tgz(evil)), (4, tgz(files, 'bz2')), (5, bz2.compress(CONF)), (6, gzip.compress(CONF, mtime=0)),
            (3, gzip.compress(b'\x00' * 100000, mtime=0)), (2, b'PK\x05\x06' + b'\x00' * 18), (6, b'\x1f\x8b')]
write('shared/tests', 'FuzzOpenArchive', archives)
B = 'fuzzboundary'
mp = ('--%s\r\nContent-Disposition: form-data; name="desc"\r\n\r\nseed\r\n--%s\r\nContent-Disposition: form-data; name="file"; filename="t.tar.gz"\r\nContent-Type: application/x-tar+gzip\r\n\r\n' % (B, B)).encode() + tgz(files) + ('\r\n--%s--\r\n' % B).encode()
mp2 = ('--%s\r\nContent-Disposition: form-data; name="file"; filename="test.json"\r\n\r\n' % B).encode() + CONF + ('\r\n--%s--\r\n' % B).encode()
tests = [(i, ('s', ''), b) for i, b in archives] + [(7, ('s', ''), mp), (7, ('s', ''), mp2), (7, ('s', ''), b'--' + B.encode()),
         (8, ('s', ''), b'[{"op": "replace", "path": "/description", "value": "x"}]'), (8, ('s', ''), b'{}'),
         (9, ('s', ''), b'{"test": "/v2/tests/{{test}}", "duration": 1, "users": 1}'), (9, ('s', ''), b'{"test": "/v2/tests/nosuch"}')]
tests += [(10, ('s', q), b'') for q in QUERIES]
write('shared/tests', 'FuzzTests', tests)
write('shared/metrics', 'FuzzParseQuery', [(i % 2, ('s', q)) for i, q in enumerate(QUERIES + [
    'names=requests,bytes_sent&summarize=1', 'names=entries_added&resolution=5', 'resolution=9223372036854775807', 'from=1&to=2',
    'from=2026-01-01T00:00:00Z&to=2126-01-01T00:00:00Z&resolution=5', 'names=' + ','.join(['requests'] * 200)])])
