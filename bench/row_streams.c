/* loom benchmark: fused attention's two row streams from L2, rows on a
 * cache line or OFF floats past one (runtime/data/dataset.h LOOM_DATA_ALIGN).
 *
 *   cc -O3 -march=native -DOFF=0 row_streams.c -o row_streams   (AVX-512 host)
 *   make -C bench OUT=../build/bench row-streams                (both offsets)
 *
 * 512 rows of 64 floats (K and V, 128 KiB each, resident in L2), in blocks
 * of B rows: each K row dotted with a query held in four registers (a tree
 * sum, a scalar store: the score), then each V row scaled by its score into
 * four register accumulators -- the shape of a fused attention kernel's key
 * loop.  Prints cycles a key (the host's GHz is assumed 2.994, the
 * calibrated Emerald Rapids; the ratio between offsets does not depend on
 * it) for K alone, V alone and both, at blocks of 16, 64 and 512 rows.  On
 * 2026-12-01 (Emerald Rapids, AVX-512): 12.6 cycles a key aligned, 27.5 at
 * 16 bytes past a line, the offset glibc's large malloc blocks have
 * (bench/alignment_emr_2026-12-01.txt). */
#ifndef OFF
#define OFF 0
#endif
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define ROWS 512
#define D 64
float *K,*V; float S[ROWS]; volatile float sink;
/* blocks of B rows: dot products of q with K rows (tree, scalar store), then acc += S_j * V_j; mode 1: K only, 2: V only, 3: both */
__attribute__((noinline)) void run(int reps,const float*q,int B,int mode){
  __m512 q0=_mm512_loadu_ps(q),q1=_mm512_loadu_ps(q+16),q2=_mm512_loadu_ps(q+32),q3=_mm512_loadu_ps(q+48);
  for(int r=0;r<reps;r++){ __m512 a0=_mm512_setzero_ps(),a1=a0,a2=a0,a3=a0;
    for(int jb=0;jb<ROWS;jb+=B){
      if(mode&1) for(int jj=0;jj<B;jj++){ const float*k=K+(long)(jb+jj)*D;
        __m512 s0=_mm512_mul_ps(q0,_mm512_loadu_ps(k)), s1=_mm512_mul_ps(q1,_mm512_loadu_ps(k+16));
        s0=_mm512_fmadd_ps(q2,_mm512_loadu_ps(k+32),s0); s1=_mm512_fmadd_ps(q3,_mm512_loadu_ps(k+48),s1);
        S[jj]=_mm512_reduce_add_ps(_mm512_add_ps(s0,s1)); }
      else for(int jj=0;jj<B;jj++) S[jj]=0.001f*jj;
      if(mode&2) for(int jj=0;jj<B;jj++){ const float*v=V+(long)(jb+jj)*D; __m512 b=_mm512_set1_ps(S[jj]);
        a0=_mm512_fmadd_ps(b,_mm512_loadu_ps(v),a0); a1=_mm512_fmadd_ps(b,_mm512_loadu_ps(v+16),a1);
        a2=_mm512_fmadd_ps(b,_mm512_loadu_ps(v+32),a2); a3=_mm512_fmadd_ps(b,_mm512_loadu_ps(v+48),a3); } }
    sink=_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0,a1),_mm512_add_ps(a2,a3))); } }
int main(){
  K=(float*)aligned_alloc(64,(size_t)ROWS*D*4+64)+OFF; V=(float*)aligned_alloc(64,(size_t)ROWS*D*4+64)+OFF;
  for(long i=0;i<(long)ROWS*D;i++){K[i]=1e-3f*(i%97);V[i]=1e-3f*(i%89);}
  float q[64]; for(int i=0;i<64;i++)q[i]=0.01f*i; double ghz=2.994; int reps=2000;
  int Bs[]={16,64,512};
  for(int bi=0;bi<3;bi++) for(int mode=1;mode<=3;mode++){ double best=1e9; for(int k=0;k<7;k++){double t0=now(); run(reps,q,Bs[bi],mode); double dt=now()-t0; if(dt<best)best=dt;}
    printf("block %3d %-10s %6.2f cycles/key\n",Bs[bi],mode==1?"K only":mode==2?"V only":"K then V",best*ghz*1e9/reps/ROWS); }
}
