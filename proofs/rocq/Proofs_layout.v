(** Proofs of rules/library/layout.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_layout.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Theorem pack_cols : pack_cols_stmt.
Proof.
  unfold pack_cols_stmt; intros; tunfold; intros s; simpl.
  bcases; finish_dm.
Qed.

Theorem pad_read : pad_read_stmt.
Proof.
  unfold pad_read_stmt; intros; tunfold; intros s; simpl.
  bcases; finish.
Qed.

Theorem pad_rows : pad_rows_stmt.
Proof.
  unfold pad_rows_stmt; intros; tunfold; intros s; simpl.
  bcases; finish.
Qed.

(** A well-shaped tensor reads zero outside its third extent. *)
Lemma WS_out2 : forall d0 d1 d2 sh e s,
  WS (d0 :: d1 :: d2 :: sh) e -> ~ (0 <= s 2%nat < d2) -> e s = szero.
Proof. intros d0 d1 d2 sh e s [_ [Hz _]] H; apply Hz; simpl; unfold stl; tauto. Qed.

(* pad_halo: in bounds, the guard of the copy holds and the read is the original one
   (the guard [p] holds there by [covers]); out of bounds in some dimension both sides
   read zero (the third dimension with [WS_out2]). *)
Theorem pad_halo1 : pad_halo1_stmt.
Proof.
  unfold pad_halo1_stmt; intros; tunfold; intros s; simpl.
  bcases; finish.
Qed.

Theorem pad_halo2 : pad_halo2_stmt.
Proof.
  unfold pad_halo2_stmt; intros; tunfold; intros s; simpl.
  bcases; finish.
Qed.

Theorem pad_halo3 : pad_halo3_stmt.
Proof.
  unfold pad_halo3_stmt; intros; tunfold; intros s; simpl.
  bcases; try finish.
  all: apply (WS_out2 _ _ _ _ _ _ H); simpl; lia.
Qed.

End Proofs.
