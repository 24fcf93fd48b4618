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
(* The scalar functions are arbitrary functions in the statements: the let is
   definitional whatever the function does. *)
Theorem let_lift_sqrt : let_lift_sqrt_stmt.
Proof. unfold let_lift_sqrt_stmt; let_proof. Qed.
Theorem let_lift_exp : let_lift_exp_stmt.
Proof. unfold let_lift_exp_stmt; let_proof. Qed.
Theorem let_lift_log : let_lift_log_stmt.
Proof. unfold let_lift_log_stmt; let_proof. Qed.
Theorem let_lift_abs : let_lift_abs_stmt.
Proof. unfold let_lift_abs_stmt; let_proof. Qed.
Theorem let_lift_max_l : let_lift_max_l_stmt.
Proof. unfold let_lift_max_l_stmt; let_proof. Qed.
Theorem let_lift_max_r : let_lift_max_r_stmt.
Proof. unfold let_lift_max_r_stmt; let_proof. Qed.
Theorem let_lift_min_l : let_lift_min_l_stmt.
Proof. unfold let_lift_min_l_stmt; let_proof. Qed.
Theorem let_lift_min_r : let_lift_min_r_stmt.
Proof. unfold let_lift_min_r_stmt; let_proof. Qed.
Theorem let_lift_select_lt_a : let_lift_select_lt_a_stmt.
Proof. unfold let_lift_select_lt_a_stmt; let_proof. Qed.
Theorem let_lift_select_lt_b : let_lift_select_lt_b_stmt.
Proof. unfold let_lift_select_lt_b_stmt; let_proof. Qed.
Theorem let_lift_select_lt_then : let_lift_select_lt_then_stmt.
Proof. unfold let_lift_select_lt_then_stmt; let_proof. Qed.
Theorem let_lift_select_lt_else : let_lift_select_lt_else_stmt.
Proof. unfold let_lift_select_lt_else_stmt; let_proof. Qed.
Theorem let_lift_select_le_a : let_lift_select_le_a_stmt.
Proof. unfold let_lift_select_le_a_stmt; let_proof. Qed.
Theorem let_lift_select_le_b : let_lift_select_le_b_stmt.
Proof. unfold let_lift_select_le_b_stmt; let_proof. Qed.
Theorem let_lift_select_le_then : let_lift_select_le_then_stmt.
Proof. unfold let_lift_select_le_then_stmt; let_proof. Qed.
Theorem let_lift_select_le_else : let_lift_select_le_else_stmt.
Proof. unfold let_lift_select_le_else_stmt; let_proof. Qed.
Theorem let_lift_select_gt_a : let_lift_select_gt_a_stmt.
Proof. unfold let_lift_select_gt_a_stmt; let_proof. Qed.
Theorem let_lift_select_gt_b : let_lift_select_gt_b_stmt.
Proof. unfold let_lift_select_gt_b_stmt; let_proof. Qed.
Theorem let_lift_select_gt_then : let_lift_select_gt_then_stmt.
Proof. unfold let_lift_select_gt_then_stmt; let_proof. Qed.
Theorem let_lift_select_gt_else : let_lift_select_gt_else_stmt.
Proof. unfold let_lift_select_gt_else_stmt; let_proof. Qed.
Theorem let_lift_select_ge_a : let_lift_select_ge_a_stmt.
Proof. unfold let_lift_select_ge_a_stmt; let_proof. Qed.
Theorem let_lift_select_ge_b : let_lift_select_ge_b_stmt.
Proof. unfold let_lift_select_ge_b_stmt; let_proof. Qed.
Theorem let_lift_select_ge_then : let_lift_select_ge_then_stmt.
Proof. unfold let_lift_select_ge_then_stmt; let_proof. Qed.
Theorem let_lift_select_ge_else : let_lift_select_ge_else_stmt.
Proof. unfold let_lift_select_ge_else_stmt; let_proof. Qed.
Theorem let_lift_select_eq_a : let_lift_select_eq_a_stmt.
Proof. unfold let_lift_select_eq_a_stmt; let_proof. Qed.
Theorem let_lift_select_eq_b : let_lift_select_eq_b_stmt.
Proof. unfold let_lift_select_eq_b_stmt; let_proof. Qed.
Theorem let_lift_select_eq_then : let_lift_select_eq_then_stmt.
Proof. unfold let_lift_select_eq_then_stmt; let_proof. Qed.
Theorem let_lift_select_eq_else : let_lift_select_eq_else_stmt.
Proof. unfold let_lift_select_eq_else_stmt; let_proof. Qed.
Theorem let_lift_select_ne_a : let_lift_select_ne_a_stmt.
Proof. unfold let_lift_select_ne_a_stmt; let_proof. Qed.
Theorem let_lift_select_ne_b : let_lift_select_ne_b_stmt.
Proof. unfold let_lift_select_ne_b_stmt; let_proof. Qed.
Theorem let_lift_select_ne_then : let_lift_select_ne_then_stmt.
Proof. unfold let_lift_select_ne_then_stmt; let_proof. Qed.
Theorem let_lift_select_ne_else : let_lift_select_ne_else_stmt.
Proof. unfold let_lift_select_ne_else_stmt; let_proof. Qed.
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
