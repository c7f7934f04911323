// Host proofs of the CDNA3 GEMM index math (g++ -std=c++17 -I csrc). Usage: host_checks <case>.
// Every check uses the kernel's own headers for the thing under test and encodes the documented
// facts (MFMA layout, bank rules) independently here.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gemm/cdna3/config.h"

using namespace kittens::cdna3;
using namespace tk::cdna3;

static int g_fail = 0;
#define CHECK(c, ...) do { if (!(c)) { if (g_fail++ < 10) { std::printf("FAIL %s:%d: ", __FILE__, __LINE__); std::printf(__VA_ARGS__); std::printf("\n"); } } } while (0)

// ---- documented MFMA 16x16x16 layout (AMD Matrix Instruction Calculator), encoded independently:
// A[i][k] -> lane i + 16*(k/4), item k%4; B[k][j] -> lane j + 16*(k/4), item k%4; D[i][j] -> lane j + 16*(i/4), item i%4.
static int doc_a_lane(int i, int k) { return i + 16 * (k / 4); }
static int doc_b_lane(int k, int j) { return j + 16 * (k / 4); }
static int doc_d_lane(int i, int j) { return j + 16 * (i / 4); }

static void case_fragments() {
  for (int which = 0; which < 3; ++which) {
    int seen[16][16] = {};
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < 4; ++e) {
        kittens::RowCol rc = which == 0 ? mfma_a_coord(l, e) : which == 1 ? mfma_b_coord(l, e) : mfma_acc_coord(l, e);
        CHECK(rc.row >= 0 && rc.row < 16 && rc.col >= 0 && rc.col < 16, "range");
        seen[rc.row][rc.col]++;
        if (which == 0) CHECK(doc_a_lane(rc.row, rc.col) == l && rc.col % 4 == e, "A map lane %d e %d", l, e);
        if (which == 1) CHECK(doc_b_lane(rc.row, rc.col) == l && rc.row % 4 == e, "B map lane %d e %d", l, e);
        if (which == 2) CHECK(doc_d_lane(rc.row, rc.col) == l && rc.row % 4 == e, "D map lane %d r %d", l, e);
      }
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) CHECK(seen[r][c] == 1, "operand %d element (%d,%d) seen %d times", which, r, c, seen[r][c]);
  }
  // frag_tile_k: the 4 MFMAs (c, h) of a 64-k tile cover k = 0..63 once, and the 16-B read of
  // lane l (8 k from frag_read_k) holds exactly the k of its two halves.
  int cnt[64] = {};
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h)
      for (int kk = 0; kk < 16; ++kk) cnt[frag_tile_k(c, h, kk)]++;
  for (int k = 0; k < 64; ++k) CHECK(cnt[k] == 1, "k %d covered %d times", k, cnt[k]);
  for (int l = 0; l < 64; ++l)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int e = 0; e < 4; ++e)
          CHECK(frag_read_k(l, c) + 4 * h + e == frag_tile_k(c, h, mfma_a_coord(l, e).col), "read k lane %d", l);
}

static void case_swizzle() {
  std::vector<int> hit(BM * kRowBytes / 2, 0);
  for (int r = 0; r < BM; ++r)
    for (int k = 0; k < 64; ++k) {
      const int o = lds_offset(r, k);
      CHECK(o >= r * 128 && o < (r + 1) * 128 && o % 2 == 0, "row-local");
      hit[o / 2]++;
      const RowK back = lds_coord(o);
      CHECK(back.row == r && back.k == k, "inverse (%d,%d)", r, k);
      if (k % 8 == 0) CHECK(o % 16 == 0, "granule aligned");
      if (r + 64 < BM) CHECK(lds_offset(r + 64, k) == o + kRow64Bytes, "row+64 identity");
      if (k < 32) CHECK(lds_offset(r, k + 32) == (o ^ kChunkXor), "chunk xor identity");
    }
  for (int v : hit) CHECK(v == 1, "bijection");
}

// ---- LDS bank model (CDNA3: 32 banks x 4 B; b128: 8-lane phases, b64: 16-lane phases, per CK docs).
// Conflict cycles of a phase = max over banks of distinct dword addresses mapped to that bank, minus 1.
static int phase_conflicts(const std::vector<int>& lanes, const std::vector<int>& addr, int bytes) {
  std::map<int, std::set<int>> bank;
  for (int l : lanes)
    for (int b = 0; b < bytes; b += 4) bank[((addr[l] + b) / 4) % 32].insert((addr[l] + b) / 4);
  int worst = 0;
  for (auto& kv : bank) worst = std::max<int>(worst, (int)kv.second.size());
  return worst - 1;
}
static int wave_conflicts(const std::vector<int>& addr, int bytes, bool alt_b128_groups) {
  std::vector<std::vector<int>> groups;
  const int per = 128 / bytes;  // lanes per phase = 128 B / access size
  if (alt_b128_groups && bytes == 16) {
    // Alternative gfx942 ds_read_b128 lane grouping reported by third parties:
    // {0-3,20-23}, {4-7,16-19}, {8-11,28-31}, {12-15,24-27}, and the same +32.
    const int base[4][2] = {{0, 20}, {4, 16}, {8, 28}, {12, 24}};
    for (int half = 0; half < 2; ++half)
      for (auto& b : base) {
        std::vector<int> g;
        for (int x = 0; x < 4; ++x) g.push_back(32 * half + b[0] + x), g.push_back(32 * half + b[1] + x);
        groups.push_back(g);
      }
  } else {
    for (int p = 0; p < 64 / per; ++p) {
      std::vector<int> g;
      for (int x = 0; x < per; ++x) g.push_back(p * per + x);
      groups.push_back(g);
    }
  }
  int total = 0;
  for (auto& g : groups) total += phase_conflicts(g, addr, bytes);
  return total;
}

static void case_banks() {
  int checked = 0;
  for (int w = 0; w < WAVES; ++w) {
    // fragment reads (ds_read_b128), every (tile, chunk) of A and B
    for (int c = 0; c < KCHUNKS; ++c) {
      for (int i = 0; i < TM; ++i) {
        std::vector<int> a(64);
        for (int l = 0; l < 64; ++l) a[l] = lds_offset(a_frag_row(w, i, l), frag_read_k(l, c));
        for (int alt = 0; alt < 2; ++alt) { CHECK(wave_conflicts(a, 16, alt) == 0, "A read conflict w%d i%d c%d alt%d", w, i, c, alt); ++checked; }
      }
      for (int j = 0; j < TN; ++j) {
        std::vector<int> b(64);
        for (int l = 0; l < 64; ++l) b[l] = lds_offset(b_frag_col(w, j, l), frag_read_k(l, c));
        for (int alt = 0; alt < 2; ++alt) { CHECK(wave_conflicts(b, 16, alt) == 0, "B read conflict w%d j%d c%d", w, j, c); ++checked; }
      }
    }
    // K-major writes (ds_write_b128)
    for (int i = 0; i < kKLoads; ++i) {
      std::vector<int> a(64);
      for (int l = 0; l < 64; ++l) { KChunk ch = kmajor_chunk(64 * w + l, i); a[l] = lds_offset(ch.row, ch.k8); }
      for (int alt = 0; alt < 2; ++alt) { CHECK(wave_conflicts(a, 16, alt) == 0, "K-major write conflict"); ++checked; }
    }
    // MN-major transposing writes (ds_write_b64), e = 0..7
    for (int e = 0; e < 8; ++e) {
      std::vector<int> a(64);
      for (int l = 0; l < 64; ++l) { MnBlock b = mnmajor_block(64 * w + l); a[l] = lds_offset(8 * b.mb + e, 4 * b.kb); }
      { CHECK(wave_conflicts(a, 8, false) == 0, "MN write conflict w%d e%d: %d", w, e, wave_conflicts(a, 8, false)); ++checked; }
    }
  }
  // the model is not vacuous: an unswizzled column read conflicts
  std::vector<int> naive(64);
  for (int l = 0; l < 64; ++l) naive[l] = (l % 16) * 128 + 16 * (l / 16);
  CHECK(wave_conflicts(naive, 16, false) > 0, "bank model found no conflict in a naive layout");
  std::printf("bank patterns checked: %d\n", checked);
}

static void case_copy_cover() {
  // every (row, k) of a 256 x 64 operand tile is written exactly once per path
  for (int mn = 0; mn < 2; ++mn) {
    std::vector<int> hit(BM * 64, 0);
    for (int t = 0; t < THREADS; ++t) {
      if (mn) {
        MnBlock b = mnmajor_block(t);
        for (int e = 0; e < 8; ++e)
          for (int r = 0; r < 4; ++r) hit[(8 * b.mb + e) * 64 + 4 * b.kb + r]++;
      } else {
        for (int i = 0; i < kKLoads; ++i) { KChunk c = kmajor_chunk(t, i); for (int e = 0; e < 8; ++e) hit[c.row * 64 + c.k8 + e]++; }
      }
    }
    for (int v : hit) CHECK(v == 1, "copy cover mn=%d", mn);
  }
}

static void case_raster() {
  for (int tm = 1; tm <= 13; ++tm)
    for (int tn = 1; tn <= 11; ++tn) {
      const int n = tm * tn;
      std::vector<int> seen(n, 0), logical(n, 0);
      for (int b = 0; b < n; ++b) {
        const int x = xcd_remap(b, n);
        CHECK(x >= 0 && x < n, "remap range");
        if (x >= 0 && x < n) logical[x]++;
        kittens::TileCoord t = block_tile(b, tm, tn, GROUP_M);
        CHECK(t.m >= 0 && t.m < tm && t.n >= 0 && t.n < tn, "tile range");
        if (t.m >= 0 && t.m < tm && t.n >= 0 && t.n < tn) seen[t.m * tn + t.n]++;
        // blocks on one XCD (b % 8 equal) get consecutive logical ids
        if (b + 8 < n) CHECK(xcd_remap(b + 8, n) == x + 1, "XCD-contiguous");
      }
      for (int v : logical) CHECK(v == 1, "remap bijection");
      for (int v : seen) CHECK(v == 1, "tile bijection");
    }
}

// ---- host model of the whole kernel: global -> (buffer clip + K mask) -> regs -> LDS bytes ->
// 16-B fragment reads -> documented MFMA -> accumulators -> epilogue, using the kernel's functions.
struct Mat {
  std::vector<uint16_t> d;  // raw 2-byte elements (values are small integers, exact in bf16)
  int64_t ld;
};
static uint16_t bf16_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return (uint16_t)(u >> 16); }
static float f_of_bf16(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; std::memcpy(&f, &u, 4); return f; }

// buffer_load_dwordx4 semantics: dword read as 0 when its byte offset + 4 > num_records.
static void buffer_load16(const uint16_t* base_elems, int64_t avail_elems_from_first, int64_t first, int64_t bytes,
                          uint32_t voff, uint16_t out[8]) {
  for (int d = 0; d < 4; ++d) {
    const int64_t off = (int64_t)voff + 4 * d;
    const bool in = off + 4 <= bytes;
    for (int h = 0; h < 2; ++h) {
      const int64_t e = first + off / 2 + h;
      out[2 * d + h] = in && e < avail_elems_from_first ? base_elems[e] : 0;
    }
  }
}

static void model_operand_to_lds(const Mat& g, bool mn, int rows, int K, int row0, int k0, std::vector<uint8_t>& lds) {
  const int64_t first = operand_first(mn, g.ld, row0, k0);
  int64_t bytes = operand_bytes(mn, g.ld, rows, K, row0, k0);
  if (bytes > 0xffffff00ll) bytes = 0xffffff00ll;  // buffer.cuh kMaxRecords
  for (int t = 0; t < THREADS; ++t) {
    uint16_t regs[4][8];
    for (int i = 0; i < 4; ++i) buffer_load16(g.d.data(), (int64_t)g.d.size(), first, bytes, operand_voff(mn, g.ld, t, i), regs[i]);
    if (k0 + BK > K) {  // mask_k
      if (mn) { MnBlock b = mnmajor_block(t); for (int r = 0; r < 4; ++r) if (k0 + 4 * b.kb + r >= K) std::memset(regs[r], 0, 16); }
      else for (int i = 0; i < 4; ++i) { KChunk c = kmajor_chunk(t, i); for (int e = 0; e < 8; ++e) if (k0 + c.k8 + e >= K) regs[i][e] = 0; }
    }
    if (mn) {
      MnBlock b = mnmajor_block(t);
      for (int e = 0; e < 8; ++e) {
        uint16_t v[4] = {regs[0][e], regs[1][e], regs[2][e], regs[3][e]};
        std::memcpy(&lds[lds_offset(8 * b.mb + e, 4 * b.kb)], v, 8);
      }
    } else {
      for (int i = 0; i < 4; ++i) { KChunk c = kmajor_chunk(t, i); std::memcpy(&lds[lds_offset(c.row, c.k8)], regs[i], 16); }
    }
  }
}

static bool model_gemm(int M, int N, int K, bool amn, bool bmn, bool with_c) {
  // A (M x K): amn ? a[k*lda + m] : a[m*lda + k]; B (K x N): bmn ? b[k*ldb + n] : b[n*ldb + k]
  Mat A, B;
  A.ld = amn ? M + 8 - M % 8 : K + 8 - K % 8;  // ld multiple of 8 (16-B aligned rows), > extent
  B.ld = bmn ? N + 8 - N % 8 : K + 8 - K % 8;
  A.d.assign((size_t)A.ld * (amn ? K : M), bf16_of(7.0f));  // padding holds junk (7) to catch leaks
  B.d.assign((size_t)B.ld * (bmn ? K : N), bf16_of(-5.0f));
  auto aval = [](int m, int k) { return (float)((m * 3 + k * 5) % 7 - 3); };
  auto bval = [](int k, int n) { return (float)((k * 2 + n * 7) % 5 - 2); };
  for (int m = 0; m < M; ++m) for (int k = 0; k < K; ++k) A.d[amn ? (size_t)k * A.ld + m : (size_t)m * A.ld + k] = bf16_of(aval(m, k));
  for (int k = 0; k < K; ++k) for (int n = 0; n < N; ++n) B.d[bmn ? (size_t)k * B.ld + n : (size_t)n * B.ld + k] = bf16_of(bval(k, n));
  const float alpha = 0.5f, beta = with_c ? 2.0f : 0.0f;
  auto cval = [](int m, int n) { return (float)((m + 2 * n) % 9 - 4); };  // C with strides (c_s0 = 1, c_s1 = M)
  std::vector<float> out((size_t)M * N, NAN);
  const int tiles_m = kittens::ceil_div(M, BM), tiles_n = kittens::ceil_div(N, BN), nblk = tiles_m * tiles_n;
  std::vector<uint8_t> As(LDS_TILE_BYTES), Bs(LDS_TILE_BYTES);
  for (int bid = 0; bid < nblk; ++bid) {
    const kittens::TileCoord t = block_tile(bid, tiles_m, tiles_n, GROUP_M);
    const int m0 = t.m * BM, n0 = t.n * BN;
    std::vector<float> acc((size_t)WAVES * 64 * TM * TN * 4, 0.f);
    auto ACC = [&](int w, int l, int i, int j, int r) -> float& { return acc[((((size_t)w * 64 + l) * TM + i) * TN + j) * 4 + r]; };
    for (int k0 = 0; k0 < K; k0 += BK) {
      std::fill(As.begin(), As.end(), 0xAB);  // poison: every byte read must have been written
      std::fill(Bs.begin(), Bs.end(), 0xAB);
      model_operand_to_lds(A, amn, M, K, m0, k0, As);
      model_operand_to_lds(B, bmn, N, K, n0, k0, Bs);
      for (int w = 0; w < WAVES; ++w)
        for (int c = 0; c < KCHUNKS; ++c) {
          uint16_t af[TM][64][8], bfr[TN][64][8];
          for (int l = 0; l < 64; ++l) {
            for (int i = 0; i < TM; ++i) std::memcpy(af[i][l], &As[lds_offset(a_frag_row(w, i, l), frag_read_k(l, c))], 16);
            for (int j = 0; j < TN; ++j) std::memcpy(bfr[j][l], &Bs[lds_offset(b_frag_col(w, j, l), frag_read_k(l, c))], 16);
          }
          for (int h = 0; h < 2; ++h)
            for (int i = 0; i < TM; ++i)
              for (int j = 0; j < TN; ++j) {
                // MFMA emulated from the documented layout only
                for (int ii = 0; ii < 16; ++ii)
                  for (int jj = 0; jj < 16; ++jj) {
                    float s = 0.f;
                    for (int kk = 0; kk < 16; ++kk)
                      s += f_of_bf16(af[i][doc_a_lane(ii, kk)][4 * h + kk % 4]) * f_of_bf16(bfr[j][doc_b_lane(kk, jj)][4 * h + kk % 4]);
                    ACC(w, doc_d_lane(ii, jj), i, j, ii % 4) += s;
                  }
              }
        }
    }
    for (int w = 0; w < WAVES; ++w)
      for (int l = 0; l < 64; ++l)
        for (int i = 0; i < TM; ++i)
          for (int j = 0; j < TN; ++j)
            for (int r = 0; r < 4; ++r) {
              // the kernel's epilogue index math (config.h epi_*), checked against acc_out_coord
              kittens::RowCol o = acc_out_coord(w, i, j, l, r);
              const int row = m0 + o.row, col = n0 + o.col;
              const int row0 = m0 + epi_wave_row(w) + 16 * i, col0 = n0 + epi_wave_col(w);
              CHECK(row == row0 + epi_lane_row(l) + r && col == col0 + 16 * j + epi_lane_col(l), "epi coords");
              const bool ok = epi_lane_row(l) + r < M - row0 && epi_lane_col(l) + 16 * j < N - col0;
              CHECK(ok == (row < M && col < N), "epi mask");
              if (!ok) continue;  // kernel: offset kOobOffset, dropped / read as 0
              const int64_t o_first = (int64_t)row0 * N + col0;
              const int64_t oe = o_first + epi_out_lane_off(l, N) + epi_out_step(r, j, N);
              CHECK(oe == (int64_t)row * N + col, "epi out offset");
              float cv = 0.f;
              if (with_c) {  // C strides c_s0 = 1, c_s1 = M
                const int64_t c_first = (int64_t)row0 * 1 + (int64_t)col0 * M;
                const int64_t ce = c_first + epi_c_lane_off(l, 1, M) + epi_c_step(r, j, 1, M);
                CHECK(ce == (int64_t)row + (int64_t)col * M, "epi C offset");
                cv = cval((int)(ce % M), (int)(ce / M));
              }
              CHECK(std::isnan(out[oe]), "element written twice");
              out[oe] = alpha * ACC(w, l, i, j, r) + beta * cv;
            }
  }
  double worst = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += (double)aval(m, k) * bval(k, n);
      ref = alpha * ref + (with_c ? beta * cval(m, n) : 0.0);
      const double got = out[(size_t)m * N + n];
      worst = std::isnan(got) ? INFINITY : std::max(worst, std::fabs(got - ref));
    }
  CHECK(worst == 0.0, "model M=%d N=%d K=%d amn=%d bmn=%d: max |err| %g", M, N, K, amn, bmn, worst);
  return worst == 0.0;
}

static void case_model() {
  const int shapes[][3] = {{256, 256, 64}, {300, 270, 130}, {1, 1, 1}, {17, 513, 65}, {257, 31, 7}};
  for (auto& s : shapes)
    for (int amn = 0; amn < 2; ++amn)
      for (int bmn = 0; bmn < 2; ++bmn) model_gemm(s[0], s[1], s[2], amn, bmn, (amn + bmn) % 2 == 0);
}

// 8-wave ping-pong schedule (config.h): simulate both groups' phases on barrier slots.
static void case_pingpong() {
  int checked = 0;
  for (int ktiles = 1; ktiles <= 7; ++ktiles) {
    struct Ev { int slot, kind, tile, idx; };
    std::vector<Ev> ev[2];
    int barriers[2] = {0, 0};
    for (int g = 0; g < 2; ++g) {
      if (g == 1) ++barriers[g];  // the extra barrier before the loop
      for (int kt = 0; kt < ktiles; ++kt)
        for (int idx = 0; idx < kPhases; ++idx) {
          ++barriers[g];
          CHECK(phase_slot(g, kt, idx) == barriers[g] - 1, "slot numbering g%d kt%d idx%d", g, kt, idx);
          const int kind = phase_kind(idx);
          const int tile = kt;
          if (kind != kPhaseNone) ev[g].push_back({phase_slot(g, kt, idx), kind, tile, idx});
        }
      if (g == 0) ++barriers[g];  // the extra barrier after the loop
    }
    CHECK(barriers[0] == barriers[1], "barrier counts %d vs %d", barriers[0], barriers[1]);
    // (1) per slot the two groups never both do memory work or both MFMA
    for (const Ev& a : ev[0])
      for (const Ev& b : ev[1])
        if (a.slot == b.slot) {
          const bool am = a.kind != kPhaseMma, bm = b.kind != kPhaseMma;
          CHECK(am != bm, "ktiles %d slot %d: kinds %d and %d", ktiles, a.slot, a.kind, b.kind);
          ++checked;
        }
    // (2) LDS hazards: reads of tile t strictly after every write of t, before every write of t+1
    for (int t = 0; t < ktiles; ++t)
      for (int g = 0; g < 2; ++g)
        for (const Ev& r : ev[g]) {
          if (r.kind != kPhaseRead || r.tile != t) continue;
          for (int h = 0; h < 2; ++h)
            for (const Ev& w : ev[h]) {
              if (w.kind != kPhaseWrite) continue;
              if (w.tile == t) CHECK(w.slot < r.slot, "read of %d at %d before write at %d", t, r.slot, w.slot);
              if (w.tile == t + 1) CHECK(r.slot < w.slot, "write of %d at %d before read of %d at %d", t + 1, w.slot, t, r.slot);
              ++checked;
            }
        }
    // (3) every MFMA phase consumes the read just before it in the same wave (no read between),
    //     and each tile gets 128 MFMAs per wave
    for (int g = 0; g < 2; ++g) {
      std::vector<int> mfmas(ktiles, 0);
      int last_read_slot = -1, last_read_tile = -1, last_read_idx = -1;
      for (const Ev& e : ev[g]) {
        if (e.kind == kPhaseRead) { last_read_slot = e.slot; last_read_tile = e.tile; last_read_idx = e.idx; }
        if (e.kind != kPhaseMma) continue;
        CHECK(last_read_slot >= 0 && last_read_tile == e.tile, "mma of tile %d without its read", e.tile);
        CHECK(last_read_idx == e.idx - 1 && last_read_slot == e.slot - 1, "mma idx %d after read idx %d", e.idx, last_read_idx);
        mfmas[e.tile] += phase_mfmas(e.idx);
      }
      for (int t = 0; t < ktiles; ++t) CHECK(mfmas[t] == MFMA_PER_KTILE, "tile %d: %d MFMAs", t, mfmas[t]);
    }
  }
  CHECK(checked > 100, "too few schedule checks: %d", checked);
}

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void()>> cases = {
      {"fragments", case_fragments}, {"swizzle", case_swizzle}, {"banks", case_banks},
      {"copy_cover", case_copy_cover}, {"raster", case_raster}, {"model", case_model},
      {"pingpong", case_pingpong}};
  if (argc != 2 || !cases.count(argv[1])) { std::printf("usage: host_checks <case>\n"); return 2; }
  cases.at(argv[1])();
  std::printf("%s %s (%d failures)\n", g_fail ? "FAIL" : "PASS", argv[1], g_fail);
  return g_fail ? 1 : 0;
}
