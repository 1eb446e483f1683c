#!/usr/bin/env python3
"""Prints module-level import cycles per crate (edges: `crate::X` paths in non-test, non-comment code).

Run from the repository root: python3 scripts/module-cycles.py"""
import os,re,collections,sys
for crate in ['proto','controller','agent','sim','testkit']:
    src=f'{crate}/src'
    edges=collections.defaultdict(set); why={}
    for root,_,files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'): continue
            path=os.path.join(root,f)
            rel=os.path.relpath(path,src)
            parts=rel[:-3].split('/')
            if parts[-1]=='mod': parts=parts[:-1]
            if len(parts)==1 and parts[0] in ('lib','main'): continue
            if 'tests' in parts or parts[-1]=='tests': continue
            top=parts[0]
            txt=open(path).read().split('#[cfg(test)]')[0]
            for line in txt.split('\n'):
                l=line.strip()
                if l.startswith('//'): continue
                for m in re.finditer(r'crate::(\w+)',l):
                    if m.group(1)!=top:
                        edges[top].add(m.group(1)); why.setdefault((top,m.group(1)),f'{rel}: {l[:90]}')
    idx={};low={};st=[];on=set();sccs=[];c=[0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in edges.get(v,()):
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v: break
            if len(comp)>1: sccs.append(comp)
    for v in list(edges):
        if v not in idx: sc(v)
    print(crate,'cycles:',sccs)
    for comp in sccs:
        for a in comp:
            for b in edges[a]:
                if b in comp: print('   ',a,'->',b,'|',why[(a,b)])
