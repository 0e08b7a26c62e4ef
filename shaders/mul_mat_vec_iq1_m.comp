#version 450

// mul_mat_vec_iq1_m.comp: D = A * B with A in iq1_m (docs/interface.md §2.5, §5). The body is
// shared by the lattice i-quants: mul_mat_vec_iq_lattice.comp.

#include "mul_mat_vec_iq_lattice.comp"
