(** Proofs of rules/library/let.rules: a [let] is definitional ([let x := v in b]). *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_let.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Ltac let_proof := intros; tunfold; intros; reflexivity.

Theorem unfold_let : unfold_let_stmt.
Proof. unfold unfold_let_stmt; let_proof. Qed.
Theorem let_lift_gen : let_lift_gen_stmt.
Proof. unfold let_lift_gen_stmt; let_proof. Qed.
Theorem let_lift_sum : let_lift_sum_stmt.
Proof. unfold let_lift_sum_stmt; let_proof. Qed.
Theorem let_lift_guard : let_lift_guard_stmt.
Proof. unfold let_lift_guard_stmt; let_proof. Qed.
Theorem let_lift_add_l : let_lift_add_l_stmt.
Proof. unfold let_lift_add_l_stmt; let_proof. Qed.
Theorem let_lift_add_r : let_lift_add_r_stmt.
Proof. unfold let_lift_add_r_stmt; let_proof. Qed.
Theorem let_lift_mul_l : let_lift_mul_l_stmt.
Proof. unfold let_lift_mul_l_stmt; let_proof. Qed.
Theorem let_lift_mul_r : let_lift_mul_r_stmt.
Proof. unfold let_lift_mul_r_stmt; let_proof. Qed.
Theorem let_lift_sub_l : let_lift_sub_l_stmt.
Proof. unfold let_lift_sub_l_stmt; let_proof. Qed.
Theorem let_lift_sub_r : let_lift_sub_r_stmt.
Proof. unfold let_lift_sub_r_stmt; let_proof. Qed.
Theorem let_lift_div_l : let_lift_div_l_stmt.
Proof. unfold let_lift_div_l_stmt; let_proof. Qed.
Theorem let_lift_div_r : let_lift_div_r_stmt.
Proof. unfold let_lift_div_r_stmt; let_proof. Qed.
Theorem let_lift_neg : let_lift_neg_stmt.
Proof. unfold let_lift_neg_stmt; let_proof. Qed.
Theorem let_lift_access : let_lift_access_stmt.
Proof. unfold let_lift_access_stmt; let_proof. Qed.
Theorem let_swap : let_swap_stmt.
Proof. unfold let_swap_stmt; let_proof. Qed.
Theorem let_lift_let : let_lift_let_stmt.
Proof. unfold let_lift_let_stmt; let_proof. Qed.
(* let_share: both lets bind the same value, and Rocq's let is definitional. *)
Theorem let_share : let_share_stmt.
Proof. unfold let_share_stmt; let_proof. Qed.

End Proofs.
