//! The case model, the lowest layer of the harness: what a case is, how it is generated, run
//! through a [`driver::Driver`] and judged. Nothing here knows which driver runs a case or
//! what a campaign does with the outcome.
//!
//! - [`kernels`]: the table of kernels and variants every front end iterates.
//! - [`cases`]: one case model per kernel (shapes, types, seeded data, proptest strategies).
//! - [`driver`]: the one boundary between a case and whoever executes its op.
//! - [`facts`]: the words findings are described with, and reachability.
//! - [`tolerance`]: the arithmetic the error models share (each kernel's own model is its
//!   case module's `bounds`).
//! - [`compare`]: per-element verdicts; [`outcome`]: the result of a case.
//! - [`work`]: the least bytes and flops of a case (for the bench).

pub mod cases;
pub mod compare;
pub mod config;
pub mod driver;
pub mod facts;
pub mod kernels;
pub mod outcome;
pub mod tolerance;
pub mod work;
