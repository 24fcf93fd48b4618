(** The generated statements of the deliberately wrong rules of
    rewrites/test_data/wrong.rules are false: each is refuted at the [Z] instance by a
    concrete instance. This shows the statements' hypotheses (well-shapedness, the left
    side's well-formedness) are not contradictory, so proving a statement means
    something.

    Not refuted: [trunc_pad_off_by_one]. Its two sides have different shapes
    ([n + 1] and [n]) but equal elements wherever both are defined and zero elsewhere,
    and the statements compare elements, not shapes: the engine refuses that rewrite
    because every step must keep the shape (DESIGN §4), which is a check, not a rule. *)

From Coq Require Import ZArith List Bool Lia.
From ATL Require Import Semantics Instances Tactics Rules_wrong.
Import ListNotations.
Open Scope Z_scope.

#[local] Existing Instance ZScalar.

Lemma WS_lit : forall c, WS [] (Lit c).
Proof.
  intros c; split; [constructor | split].
  - intros s H; exfalso; apply H; exact I.
  - intros; reflexivity.
Qed.

Lemma WS_gen : forall n sh e, 0 <= n -> (forall i, WS sh (e i)) -> WS (n :: sh) (Gen 0 n e).
Proof.
  intros n sh e Hn He; split; [constructor; [lia | apply (He 0)] | split].
  - intros s Hs; unfold Gen; destruct (in_range (s O) (n - 0)) eqn:E; [| reflexivity].
    apply in_range_true in E. destruct (He (0 + s O)) as [_ [Hz _]]. apply Hz.
    intros Hin; apply Hs; simpl; split; [lia | exact Hin].
  - intros s s' Ha; unfold Gen.
    assert (H0 : s O = s' O) by (apply Ha; simpl; lia). rewrite H0.
    destruct (in_range (s' O) (n - 0)); [| reflexivity].
    destruct (He (0 + s' O)) as [_ [_ Hx]]. apply Hx.
    intros j Hj; unfold stl; apply Ha; simpl; lia.
Qed.

(** Discharge the hypotheses of a specialized statement, then compare at [s]. *)
Ltac refute H s :=
  repeat match type of H with
  | ?A -> _ =>
      let h := fresh in
      assert (h : A) by (intros; repeat (first [apply WS_lit | apply WS_gen; [lia | intros]]);
                         try reflexivity; vm_compute; try lia; try discriminate);
      specialize (H h); clear h
  end;
  specialize (H s); vm_compute in H; discriminate H.

Theorem get_gen_unbounded_false : ~ get_gen_unbounded_stmt.
Proof. intro H; specialize (H (fun _ => Lit 1) 5 1 []); refute H (stream_of []). Qed.

Theorem split_gen_unbounded_false : ~ split_gen_unbounded_stmt.
Proof. intro H; specialize (H (fun _ => Lit 1) 1 2 0 []); refute H (stream_of [1]). Qed.

Theorem guard_lift_changes_variable_false : ~ guard_lift_changes_variable_stmt.
Proof. intro H; specialize (H 0 (fun _ => Lit 1) 2 0 []); refute H (stream_of []). Qed.

Theorem guard_drop_false : ~ guard_drop_stmt.
Proof. intro H; specialize (H (Lit 1) false []); refute H (stream_of []). Qed.

Theorem mul_add_forgets_false : ~ mul_add_forgets_stmt.
Proof. intro H; specialize (H (Lit 0) (Lit 0) (Lit 1) [] [] []); refute H (stream_of []). Qed.

Theorem get_pad_l_wrong_sign_false : ~ get_pad_l_wrong_sign_stmt.
Proof.
  intro H; specialize (H 1 (Gen 0 1 (fun _ => Lit 1)) 1 [1]); refute H (stream_of []).
Qed.

Theorem get_trunc_l_no_offset_false : ~ get_trunc_l_no_offset_stmt.
Proof.
  intro H; specialize (H 1 (Gen 0 2 (fun i => Lit i)) 0 [2]); refute H (stream_of []).
Qed.

Theorem split_sum_skips_false : ~ split_sum_skips_stmt.
Proof. intro H; specialize (H (fun _ => Lit 1) 1 0 0 []); refute H (stream_of []). Qed.

Theorem flatten_def_swapped_false : ~ flatten_def_swapped_stmt.
Proof.
  intro H; specialize (H 2 1 (Gen 0 1 (fun _ => Gen 0 2 (fun _ => Lit 1))) []);
    refute H (stream_of [1]).
Qed.

Theorem gen_swap_without_transpose_false : ~ gen_swap_without_transpose_stmt.
Proof.
  intro H; specialize (H 0 1 0 2 (fun i j => Lit (i - j)) []); refute H (stream_of [0; 1]).
Qed.

Theorem tile_id_wrong_tail_false : ~ tile_id_wrong_tail_stmt.
Proof.
  intro H; specialize (H 1 1 (Gen 0 1 (fun _ => Lit 1)) []); refute H (stream_of [0]).
Qed.

(** The max-reduction's hypotheses are satisfiable: at [Z], addition is associative and
    commutative with identity [0], and with it the tiling of a max-reduction that drops
    a partial tile ([max_tile] without its multiple condition) is refuted. *)
Theorem max_tile_partial_false : ~ max_tile_partial_stmt.
Proof.
  intro H; specialize (H (fun _ => Lit 1) 1 2 [] 0 Z.add Z.add_assoc Z.add_comm Z.add_0_l);
    refute H (stream_of []).
Qed.
