(** Proofs of rules/library/reshape.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_reshape.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Ltac rs := intros; tunfold; let x := fresh "s" in intro x; simpl; bcases; finish.
Ltac rs_dm := intros; tunfold; let x := fresh "s" in intro x; simpl; bcases; finish_dm.

Theorem trunc_pad_r : trunc_pad_r_stmt.
Proof. unfold trunc_pad_r_stmt; intros; open_shape sh_v; rs. Qed.
Theorem trunc_pad_l : trunc_pad_l_stmt.
Proof. unfold trunc_pad_l_stmt; intros; open_shape sh_v; rs. Qed.
Theorem tile_id : tile_id_stmt.
Proof. unfold tile_id_stmt; rs_dm. Qed.
Theorem split_flatten : split_flatten_stmt.
Proof.
  unfold split_flatten_stmt; rs_dm.
  apply mod_mul_add; lia.
Qed.
Theorem flatten_split : flatten_split_stmt.
Proof. unfold flatten_split_stmt; rs_dm. Qed.
Theorem transpose_transpose : transpose_transpose_stmt.
Proof. unfold transpose_transpose_stmt; intros; open_shape sh_v; rs. Qed.
Theorem transpose_guard : transpose_guard_stmt.
Proof. unfold transpose_guard_stmt; intros; destruct p; rs. Qed.
Theorem flatten_guard : flatten_guard_stmt.
Proof. unfold flatten_guard_stmt; intros; destruct p; rs. Qed.
Theorem transpose_add : transpose_add_stmt.
Proof. unfold transpose_add_stmt; intros; subst; rs; ring. Qed.
Theorem flatten_add : flatten_add_stmt.
Proof. unfold flatten_add_stmt; intros; subst; rs; ring. Qed.
Theorem transpose_sum : transpose_sum_stmt.
Proof. unfold transpose_sum_stmt; rs; symmetry; apply sumn_zero. Qed.
Theorem transpose_let : transpose_let_stmt.
Proof. unfold transpose_let_stmt; rs. Qed.
Theorem flatten_let : flatten_let_stmt.
Proof. unfold flatten_let_stmt; rs. Qed.
Theorem flatten_gen : flatten_gen_stmt.
Proof.
  unfold flatten_gen_stmt; intros; tunfold; intro s; simpl.
  replace (Z.max 0 (c - 0)) with c by lia. bcases; finish_dm.
Qed.
Theorem split_def : split_def_stmt.
Proof. unfold split_def_stmt; rs. Qed.
Theorem pad_r_def : pad_r_def_stmt.
Proof. unfold pad_r_def_stmt; rs. Qed.
Theorem pad_l_def : pad_l_def_stmt.
Proof. unfold pad_l_def_stmt; rs. Qed.
Theorem trunc_r_def : trunc_r_def_stmt.
Proof. unfold trunc_r_def_stmt; rs. Qed.
Theorem trunc_l_def : trunc_l_def_stmt.
Proof. unfold trunc_l_def_stmt; rs. Qed.
Theorem transpose_def : transpose_def_stmt.
Proof. unfold transpose_def_stmt; rs. Qed.
Theorem flatten_def : flatten_def_stmt.
Proof. unfold flatten_def_stmt; rs. Qed.
Theorem concat_def : concat_def_stmt.
Proof. unfold concat_def_stmt; rs. Qed.
Theorem trunc_r_let : trunc_r_let_stmt.
Proof. unfold trunc_r_let_stmt; rs. Qed.
Theorem split_let : split_let_stmt.
Proof. unfold split_let_stmt; rs. Qed.

Theorem gen_trunc_r : gen_trunc_r_stmt.
Proof. unfold gen_trunc_r_stmt; intros; open_shape sh_e; rs. Qed.
Theorem gen_flatten : gen_flatten_stmt.
Proof.
  unfold gen_flatten_stmt; intros.
  pose proof (WS_dim0 _ _ _ (H lo)). pose proof (WS_dim1 _ _ _ _ (H lo)).
  tunfold; intro s; simpl.
  replace (Z.max 0 (c - 0)) with c by lia. replace (Z.max 0 (r - 0)) with r by lia.
  replace (c - 0) with c by lia. replace (r - 0) with r by lia.
  bcases; finish_dm.
Qed.
Theorem guard_trunc_r : guard_trunc_r_stmt.
Proof. unfold guard_trunc_r_stmt; intros; destruct p; rs. Qed.

(** A well-shaped tensor reads zero outside its third extent. *)
Lemma WS_out2 : forall d0 d1 d2 sh e s,
  WS (d0 :: d1 :: d2 :: sh) e -> ~ (0 <= s 2%nat < d2) -> e s = szero.
Proof. intros d0 d1 d2 sh e s [_ [Hz _]] H; apply Hz; simpl; unfold stl; tauto. Qed.

Theorem flatten_gen_out : flatten_gen_out_stmt.
Proof.
  unfold flatten_gen_out_stmt; intros c n r v sh_v H _.
  pose proof (WS_dim0 _ _ _ H). pose proof (WS_dim1 _ _ _ _ H).
  assert (0 <= n) by (destruct H as [Hf _]; inversion Hf; subst;
    match goal with Hc : Forall _ (c :: _) |- _ => inversion Hc end;
    match goal with Hn : Forall _ (n :: _) |- _ => inversion Hn end; assumption).
  tunfold; intro s; simpl.
  replace (Z.max 0 (c - 0)) with c by lia. replace (Z.max 0 (r - 0)) with r by lia.
  replace (Z.max 0 (n - 0)) with n by lia.
  replace (c - 0) with c by lia. replace (r - 0) with r by lia. replace (n - 0) with n by lia.
  bcases; finish_dm;
    try (apply (WS_out2 _ _ _ _ _ _ H); simpl; lia).
Qed.

Theorem trunc_r_transpose_gen : trunc_r_transpose_gen_stmt.
Proof. unfold trunc_r_transpose_gen_stmt; intros; open_shape sh_e; rs. Qed.

End Proofs.
