# Python transliteration of the cm1 branch of shaders/mul_mm.comp (MUL_MAT), to check its index
# math without a coopmat device (docs/mul-mm-cm1.md): staging, warp tiles, TK-deep steps,
# coopMatLoad (row-major A(i, j) = buf[off + i·stride + j]; column-major B(i, j) =
# buf[off + j·stride + i]), coopMatStore (column-major, stride TM) and the bounds-checked store,
# with split_k and batches, against numpy. Every output must be written (NaN otherwise) and
# equal the product. Needs numpy. Run: python3 ci/cm1_index_model.py
import numpy as np
def run(spec, M, N, K, batches, split_k):
    BLOCK_SIZE,BM,BN,BK,WM,WN,WMITER,TM,TN,TK,WARP = spec
    STRIDE=BK+8; NUM_WARPS=BLOCK_SIZE//WARP; WARP_TILES=(BM//WM)*(BN//WN)
    TPW=(WARP_TILES+NUM_WARPS-1)//NUM_WARPS; CMS_M=WM//TM; CMS_N=WN//TN; CMS=CMS_M*CMS_N
    rng=np.random.default_rng(1)
    A=rng.standard_normal((batches,M,K)); B=rng.standard_normal((batches,N,K))
    k_split = K if split_k==1 else -(-K//split_k)
    D=np.full(split_k*batches*M*N, np.nan)
    blocks_m=-(-M//BM)
    for z in range(batches):
      for x in range(blocks_m*split_k):
        for y in range(-(-N//BN)):
          ir=x%blocks_m; ik=x//blocks_m; row0=ir*BM; col0=y*BN
          start_k=min(ik*k_split,K); end_k=min(K,start_k+k_split)
          d_base=z*M*N + ik*M*N*batches
          sums={(w,s):np.zeros((TM,TN)) for w in range(NUM_WARPS) for s in range(TPW*CMS)}
          block_k=start_k
          while block_k<end_k:
            buf_a=np.zeros(BM*STRIDE); buf_b=np.zeros(BN*STRIDE)
            for idx in range(BM*BK):
              r,c=divmod(idx,BK); m=row0+r; k=block_k+c
              buf_a[r*STRIDE+c]=A[z,m,k] if (m<M and k<end_k) else 0
            for idx in range(BN*BK):
              r,c=divmod(idx,BK); col=col0+r; k=block_k+c
              buf_b[r*STRIDE+c]=B[z,col,k] if (col<N and k<end_k) else 0
            for w in range(NUM_WARPS):
              for t in range(TPW):
                wt=w+t*NUM_WARPS
                if wt<WARP_TILES:
                  r0=(wt%(BM//WM))*WM; c0=(wt//(BM//WM))*WN
                  kk=0
                  while kk<BK and block_k+kk<end_k:
                    for cm in range(CMS_M):
                      off=(r0+cm*TM)*STRIDE+kk
                      ma=np.array([[buf_a[off+i*STRIDE+j] for j in range(TK)] for i in range(TM)])
                      for cn in range(CMS_N):
                        off=(c0+cn*TN)*STRIDE+kk
                        mb=np.array([[buf_b[off+j*STRIDE+i] for j in range(TN)] for i in range(TK)])
                        s=t*CMS+cn*CMS_M+cm
                        sums[(w,s)]=ma@mb+sums[(w,s)]
                    kk+=TK
            block_k+=BK
          for w in range(NUM_WARPS):
            stage=np.zeros(TM*TN)
            for t in range(TPW):
              wt=w+t*NUM_WARPS
              if wt<WARP_TILES:
                r0=row0+(wt%(BM//WM))*WM; c0=col0+(wt//(BM//WM))*WN
                for cn in range(CMS_N):
                  for cm in range(CMS_M):
                    C=sums[(w,t*CMS+cn*CMS_M+cm)]
                    for r in range(TM):
                      for c in range(TN): stage[c*TM+r]=C[r,c]
                    for e in range(TM*TN):
                      row=r0+cm*TM+e%TM; col=c0+cn*TN+e//TM
                      if row<M and col<N: D[d_base+col*M+row]=stage[e]
    D=D.reshape(split_k,batches,N,M).sum(0)
    want=np.einsum('zmk,znk->znm',A,B)
    return np.abs(D-want).max()
sg=32
l=[128,128,128,16,2*sg,64,2,16,16,16,sg]; m=[128,64,64,16,sg,32,2,16,16,16,sg]; s=[sg,32,32,16,32,32,2,16,16,16,sg]
lq=l[:]; lq[3]=32; sq=[sg,32,32,32,32,32,2,16,16,16,sg]
for spec,(M,N,K,b,sk) in [(s,(33,40,37,2,1)),(m,(70,65,50,1,2)),(l,(130,129,33,1,1)),(lq,(129,140,100,1,3)),(sq,(5,9,70,2,2)),
                          ([128,128,128,16,64,64,2,16,16,16,64],(130,140,40,1,1))]:
    err = run(spec, M, N, K, b, sk)
    print("BLOCK_SIZE, BM, BN, BK =", spec[:4], "WARP", spec[10], "M, N, K, batches, split_k =", (M, N, K, b, sk), "max error", err)
    assert err < 1e-9, "index model disagrees (NaN: an output never written)"
