(** Proofs of rules/library/access.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_access.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Theorem get_gen : get_gen_stmt.
Proof.
  unfold get_gen_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_gen_offset : get_gen_offset_stmt.
Proof.
  unfold get_gen_offset_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_gen_guard : get_gen_guard_stmt.
Proof.
  unfold get_gen_guard_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_guard : get_guard_stmt.
Proof. unfold get_guard_stmt; intros; tunfold; intros s; destruct p; reflexivity. Qed.

Theorem get_add : get_add_stmt.
Proof.
  unfold get_add_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_sub : get_sub_stmt.
Proof.
  unfold get_sub_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_sum : get_sum_stmt.
Proof.
  unfold get_sum_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_transpose : get_transpose_stmt.
Proof.
  unfold get_transpose_stmt; intros; open_shape sh_e; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_flatten : get_flatten_stmt.
Proof.
  unfold get_flatten_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_split : get_split_stmt.
Proof.
  unfold get_split_stmt; intros; tunfold; intros s; simpl; bcases; finish.
  exfalso; pose proof (cdiv_gt r c i j); lia.
Qed.

Theorem get_pad_r : get_pad_r_stmt.
Proof.
  unfold get_pad_r_stmt; intros; open_shape sh_e; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_pad_l : get_pad_l_stmt.
Proof.
  unfold get_pad_l_stmt; intros; open_shape sh_e; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_trunc_r : get_trunc_r_stmt.
Proof.
  unfold get_trunc_r_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_trunc_l : get_trunc_l_stmt.
Proof.
  unfold get_trunc_l_stmt; intros; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_concat_l : get_concat_l_stmt.
Proof.
  unfold get_concat_l_stmt; intros; open_shape sh_b; tunfold; intros s; simpl; bcases; finish.
Qed.

Theorem get_concat_r : get_concat_r_stmt.
Proof.
  unfold get_concat_r_stmt; intros; open_shape sh_b; tunfold; intros s; simpl; bcases; finish.
Qed.

End Proofs.
