(** The two instances of the scalar ring: [R] (what the proofs mean: ATL's values are
    reals) and [Z] (exact and computable, for the semantic agreement examples). *)

From Coq Require Import ZArith Reals Ring.
From ATL Require Import Semantics.

Definition RScalar : Scalar := {|
  scalar := R; szero := R0; sone := R1;
  sadd := Rplus; smul := Rmult; ssub := Rminus; sopp := Ropp;
  sring := RTheory
|}.

Definition ZScalar : Scalar := {|
  scalar := Z; szero := 0%Z; sone := 1%Z;
  sadd := Z.add; smul := Z.mul; ssub := Z.sub; sopp := Z.opp;
  sring := Zth
|}.
