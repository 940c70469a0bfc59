import re,statistics as st,sys,glob
import os; out=sys.argv[1] if len(sys.argv)>1 else os.path.dirname(os.path.abspath(__file__))
mpi={}
for line in open(f'{out}/mpi.tsv'):
    f=line.split('\t')
    if f[0].startswith('#'): continue
    mpi[(f[0],int(f[1]),f[2],int(f[3]),f[10])]=float(f[4])
def rx(path,op='allreduce'):
    rows={};cur=None;seen=set()
    for line in open(path):
        m=re.match(r'# (\w+), (\d+) ranks',line)
        if m: cur=m.group(1); first=True; continue
        f=line.split()
        if len(f)>=13 and f[0].isdigit():
            # the first row of a block runs cold (a throw-away size), but a barrier's block has one row
            if first and cur!='barrier': first=False; continue
            size=int(f[0])
            if (cur,size) in rows: continue
            rows[(cur,size)]=(float(f[5]),float(f[9]) if f[9]!='-' else None)
    return rows
def med(l): return st.median([q for q in l if q]) if any(l) else float('nan')
def ratio(x,peer):
    'the median (min-max) of same-round ratios rxccl / peer'
    q=[a/b for a,b in zip(x,peer) if a and b]
    return f'{st.median(q):.2f} ({min(q):.2f}-{max(q):.2f})'
def beside(v,t,x,*more):
    'the cells every row shares: vader, MPI tcp, rxccl (and `more` of its columns), the ratios to both peers'
    return ' | '.join([f'{med(v):.1f}',f'{med(t):.1f}',f'{med(x):.1f}',*(f'{med(m):.1f}' for m in more),ratio(x,v),ratio(x,t)])
sizes=[8,1024,8192,131072,1048576,8388608,67108864]
R={r:rx(f'{out}/rx-r{r}.txt') for r in (1,2,3)}
print('size | vader | MPI tcp | rxccl in place | rxccl fresh | rx/vader (min-max) | rx/tcp (min-max)')
for s in sizes:
    v=[mpi.get(('mpi-shm',2,'allreduce',s,f'r{r}')) for r in (1,2,3)]
    t=[mpi.get(('mpi-tcp',2,'allreduce',s,f'r{r}')) for r in (1,2,3)]
    x=[R[r].get(('allreduce',s),(None,None))[1] for r in (1,2,3)]
    xf=[R[r].get(('allreduce',s),(None,None))[0] for r in (1,2,3)]
    print(f'{s} | {beside(v,t,x,xf)}')
print()
# 4 ranks: broadcast and all-gather beside vader and MPI tcp (rxccl in place where it has the form)
m4={}
for line in open(f'{out}/mpi4.tsv'):
    f=line.split('\t')
    if f[0].startswith('#'): continue
    m4[(f[0],f[2],int(f[3]),f[10])]=float(f[4])
R4={r:rx(f'{out}/rx4-r{r}.txt') for r in (1,2,3)}
print('4 ranks op size | vader | MPI tcp | rxccl | rx/vader (min-max) | rx/tcp (min-max)')
for op in ('broadcast','allgather'):
    for s in (262144,1048576,4194304):
        v=[m4.get(('mpi-shm',op,s,f'r{r}')) for r in (1,2,3)]
        t=[m4.get(('mpi-tcp',op,s,f'r{r}')) for r in (1,2,3)]
        x=[R4[r].get((op,s),(None,None))[1] for r in (1,2,3)]
        print(f'{op} {s} | {beside(v,t,x)}')
print()
nm={}
for line in open(f'{out}/n/mpi.tsv'):
    f=line.split('\t')
    if f[0].startswith('#'): continue
    nm[(int(f[1]),f[2],int(f[3]),f[10])]=float(f[4])
for n in (8,16):
    Rn={r:rx(f'{out}/n/rx-{n}-r{r}.txt') for r in (1,2,3)}
    for op in ('allreduce','barrier'):
        for s in ((8,1024) if op=='allreduce' else (8,)):
            t=[nm.get((n,op,s if op=='allreduce' else 0,f'r{r}')) or nm.get((n,op,s,f'r{r}')) for r in (1,2,3)]
            x=[Rn[r].get((op,s),(None,None))[1] if op=='allreduce' else Rn[r].get((op,0),(None,None))[0] for r in (1,2,3)]
            rt=[a/b for a,b in zip(x,t) if a and b]
            print(n,op,s,'mpi tcp',[q for q in t],'rx',x,'ratio med',round(st.median(rt),2) if rt else None, (round(min(rt),2),round(max(rt),2)) if rt else '')
