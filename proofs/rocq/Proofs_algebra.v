(** Proofs of rules/library/algebra.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_algebra.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Ltac alg := intros; tunfold; intros s; simpl; try ring.

Theorem add_comm : add_comm_stmt.
Proof. unfold add_comm_stmt; alg. Qed.
Theorem mul_comm : mul_comm_stmt.
Proof. unfold mul_comm_stmt; alg. Qed.
Theorem add_assoc : add_assoc_stmt.
Proof. unfold add_assoc_stmt; alg. Qed.
Theorem mul_assoc : mul_assoc_stmt.
Proof. unfold mul_assoc_stmt; alg. Qed.
Theorem mul_add_l : mul_add_l_stmt.
Proof. unfold mul_add_l_stmt; alg. Qed.
Theorem mul_add_r : mul_add_r_stmt.
Proof. unfold mul_add_r_stmt; alg. Qed.
Theorem mul_sum_l : mul_sum_l_stmt.
Proof. unfold mul_sum_l_stmt; alg. rewrite sumn_mul_l; reflexivity. Qed.
Theorem mul_sum_r : mul_sum_r_stmt.
Proof. unfold mul_sum_r_stmt; alg. rewrite sumn_mul_r; reflexivity. Qed.
Theorem scale_into_sum : scale_into_sum_stmt.
Proof.
  unfold scale_into_sum_stmt; alg. rewrite <- sumn_mul_r.
  apply sumn_ext; intros; ring.
Qed.
Theorem sum_mul_l : sum_mul_l_stmt.
Proof. unfold sum_mul_l_stmt; alg. rewrite sumn_mul_l; reflexivity. Qed.
Theorem sum_add : sum_add_stmt.
Proof. unfold sum_add_stmt; alg. rewrite sumn_add; reflexivity. Qed.
Theorem gen_add : gen_add_stmt.
Proof. unfold gen_add_stmt; alg; bcases; ring. Qed.
Theorem add_gen : add_gen_stmt.
Proof. unfold add_gen_stmt; alg; bcases; ring. Qed.
Theorem mul_one : mul_one_stmt.
Proof. unfold mul_one_stmt; alg. Qed.
Theorem neg_neg : neg_neg_stmt.
Proof. unfold neg_neg_stmt; alg. Qed.

End Proofs.
