(** Proofs of rules/library/guard.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_guard.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Theorem guard_true : guard_true_stmt.
Proof. unfold guard_true_stmt; intros; tunfold; reflexivity. Qed.

Theorem guard_false_scalar : guard_false_scalar_stmt.
Proof. unfold guard_false_scalar_stmt; intros; tunfold; reflexivity. Qed.

Theorem guard_elim : guard_elim_stmt.
Proof. unfold guard_elim_stmt; intros; subst; tunfold; reflexivity. Qed.

Theorem guard_and : guard_and_stmt.
Proof. unfold guard_and_stmt; intros; tunfold; intros s; destruct p, q; reflexivity. Qed.

Theorem guard_dup : guard_dup_stmt.
Proof. unfold guard_dup_stmt; intros; tunfold; intros s; destruct p; reflexivity. Qed.

Theorem guard_split : guard_split_stmt.
Proof. unfold guard_split_stmt; intros; tunfold; intros s; destruct p, q; reflexivity. Qed.

Theorem guard_comm : guard_comm_stmt.
Proof. unfold guard_comm_stmt; intros; tunfold; intros s; destruct p, q; reflexivity. Qed.

Theorem guard_lift_sum : guard_lift_sum_stmt.
Proof.
  unfold guard_lift_sum_stmt; intros; tunfold; intros s.
  destruct p; [reflexivity | apply sumn_zero].
Qed.

Theorem guard_lift_gen : guard_lift_gen_stmt.
Proof.
  unfold guard_lift_gen_stmt; intros; tunfold; intros s.
  destruct p; bcases; reflexivity.
Qed.

Theorem guard_mul_l : guard_mul_l_stmt.
Proof. unfold guard_mul_l_stmt; intros; tunfold; intros s; destruct p; ring. Qed.

Theorem guard_mul_r : guard_mul_r_stmt.
Proof. unfold guard_mul_r_stmt; intros; tunfold; intros s; destruct p; ring. Qed.

Theorem guard_add : guard_add_stmt.
Proof. unfold guard_add_stmt; intros; tunfold; intros s; destruct p; ring. Qed.

Theorem guard_and_comm : guard_and_comm_stmt.
Proof. unfold guard_and_comm_stmt; intros; tunfold; intros s; destruct p, q; reflexivity. Qed.

Theorem spec_lt : spec_lt_stmt.
Proof. unfold spec_lt_stmt; intros; tunfold; intros s; destruct (a <? b); simpl; ring. Qed.

Theorem spec_le : spec_le_stmt.
Proof. unfold spec_le_stmt; intros; tunfold; intros s; destruct (a <=? b); simpl; ring. Qed.

Theorem spec_eq : spec_eq_stmt.
Proof. unfold spec_eq_stmt; intros; tunfold; intros s; destruct (a =? b); simpl; ring. Qed.

Theorem spec_ne : spec_ne_stmt.
Proof. unfold spec_ne_stmt; intros; tunfold; intros s; destruct (a =? b); simpl; ring. Qed.

End Proofs.
