(** Lemmas and tactics shared by the proofs of the rule files. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics.
Import ListNotations.
Open Scope Z_scope.

Section Lemmas.
Context {K : Scalar}.
Add Ring Kring : sring.

Lemma in_range_true : forall k n, in_range k n = true -> 0 <= k < n.
Proof. unfold in_range; intros k n H; apply andb_true_iff in H; lia. Qed.

Lemma in_range_false : forall k n, in_range k n = false -> ~ (0 <= k < n).
Proof.
  unfold in_range; intros k n H; apply andb_false_iff in H.
  destruct H as [H | H]; [apply Z.leb_gt in H | apply Z.ltb_ge in H]; lia.
Qed.

Lemma in_range_of : forall k n, 0 <= k < n -> in_range k n = true.
Proof. unfold in_range; intros; apply andb_true_iff; lia. Qed.

Lemma in_range_not : forall k n, ~ (0 <= k < n) -> in_range k n = false.
Proof.
  unfold in_range; intros k n H; apply andb_false_iff.
  destruct (Z_le_dec 0 k); [right; apply Z.ltb_ge | left; apply Z.leb_gt]; lia.
Qed.

(** A well-shaped tensor reads zero outside its first extent. *)
Lemma WS_out0 : forall d sh e s, WS (d :: sh) e -> ~ (0 <= s O < d) -> e s = szero.
Proof. intros d sh e s [_ [Hz _]] H; apply Hz; simpl; tauto. Qed.

Lemma WS_out1 : forall d0 d1 sh e s,
  WS (d0 :: d1 :: sh) e -> ~ (0 <= s 1%nat < d1) -> e s = szero.
Proof. intros d0 d1 sh e s [_ [Hz _]] H; apply Hz; simpl; unfold stl; tauto. Qed.

Lemma WS_ext : forall sh e s s', WS sh e -> (forall j, s j = s' j) -> e s = e s'.
Proof. intros sh e s s' [_ [_ He]] H; apply He; intros j _; apply H. Qed.

Lemma WS_scalar : forall e s s', WS [] e -> e s = e s'.
Proof. intros e s s' [_ [_ He]]; apply He; intros j Hj; simpl in Hj; lia. Qed.

Lemma WS_dim0 : forall d sh e, WS (d :: sh) e -> 0 <= d.
Proof. intros d sh e [Hf _]; inversion Hf; assumption. Qed.

Lemma WS_dim1 : forall d0 d1 sh e, WS (d0 :: d1 :: sh) e -> 0 <= d1.
Proof. intros d0 d1 sh e [Hf _]; inversion Hf as [|? ? ? Hf']; inversion Hf'; assumption. Qed.

(** Sums. *)
Lemma sumn_ext : forall n lo f g,
  (forall i, lo <= i < lo + Z.of_nat n -> f i = g i) -> sumn n lo f = sumn n lo g.
Proof.
  induction n; intros lo f g H; simpl; [reflexivity |].
  rewrite (H lo) by lia. rewrite (IHn (lo + 1) f g); [reflexivity |].
  intros i Hi; apply H; lia.
Qed.

Lemma sumn_zero : forall n lo, sumn n lo (fun _ => szero) = szero.
Proof. induction n; intros; simpl; [reflexivity | rewrite IHn; ring]. Qed.

Lemma sumn_add : forall n lo f g,
  sumn n lo (fun i => sadd (f i) (g i)) = sadd (sumn n lo f) (sumn n lo g).
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma sumn_sub : forall n lo f g,
  sumn n lo (fun i => ssub (f i) (g i)) = ssub (sumn n lo f) (sumn n lo g).
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma sumn_opp : forall n lo f,
  sumn n lo (fun i => sopp (f i)) = sopp (sumn n lo f).
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma sumn_mul_l : forall n lo a f,
  sumn n lo (fun i => smul a (f i)) = smul a (sumn n lo f).
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma sumn_mul_r : forall n lo a f,
  sumn n lo (fun i => smul (f i) a) = smul (sumn n lo f) a.
Proof. induction n; intros; simpl; [ring | rewrite IHn; ring]. Qed.

Lemma sumn_swap : forall n m lo lo' f,
  sumn n lo (fun i => sumn m lo' (fun j => f i j))
  = sumn m lo' (fun j => sumn n lo (fun i => f i j)).
Proof.
  induction n; intros; simpl.
  - rewrite sumn_zero; reflexivity.
  - rewrite IHn. rewrite <- sumn_add. reflexivity.
Qed.

Lemma sumn_app : forall n m lo f,
  sumn (n + m) lo f = sadd (sumn n lo f) (sumn m (lo + Z.of_nat n) f).
Proof.
  induction n; intros; simpl.
  - replace (lo + 0) with lo by lia; ring.
  - rewrite IHn. replace (lo + 1 + Z.of_nat n) with (lo + Z.pos (Pos.of_succ_nat n)) by lia.
    ring.
Qed.

Lemma sumn_shift : forall n lo d f,
  sumn n (lo + d) f = sumn n lo (fun i => f (i + d)).
Proof.
  induction n; intros; simpl; [reflexivity |].
  replace (lo + d + 1) with (lo + 1 + d) by lia. rewrite IHn. reflexivity.
Qed.

Lemma mod_mul_add : forall a b m, 0 <= b < m -> (a * m + b) mod m = b.
Proof.
  intros a b m H. rewrite Z.add_comm, Z.mod_add by lia. apply Z.mod_small; lia.
Qed.

Lemma div_mul_add : forall a b m, 0 <= b < m -> (a * m + b) / m = a.
Proof.
  intros a b m H. rewrite Z.add_comm, Z.div_add by lia. rewrite Z.div_small by lia. lia.
Qed.

Lemma sadd_0_r : forall x, sadd x szero = x.
Proof. intros; ring. Qed.
Lemma sadd_0_l : forall x, sadd szero x = x.
Proof. intros; ring. Qed.

(** Sums over integer ranges. *)
Definition sumZ (lo hi : Z) (f : Z -> scalar) : scalar := sumn (Z.to_nat (hi - lo)) lo f.

Lemma sumZ_split : forall lo k hi f, lo <= k <= hi ->
  sumZ lo hi f = sadd (sumZ lo k f) (sumZ k hi f).
Proof.
  intros lo k hi f H; unfold sumZ.
  replace (Z.to_nat (hi - lo)) with (Z.to_nat (k - lo) + Z.to_nat (hi - k))%nat by lia.
  rewrite sumn_app. replace (lo + Z.of_nat (Z.to_nat (k - lo))) with k by lia.
  reflexivity.
Qed.

Lemma sumZ_empty : forall lo hi f, hi <= lo -> sumZ lo hi f = szero.
Proof. intros lo hi f H; unfold sumZ; replace (Z.to_nat (hi - lo)) with O by lia; reflexivity. Qed.

Lemma sumZ_ext : forall lo hi f g, (forall i, lo <= i < hi -> f i = g i) ->
  sumZ lo hi f = sumZ lo hi g.
Proof. intros lo hi f g H; unfold sumZ; apply sumn_ext; intros i Hi; apply H; lia. Qed.

Lemma sumZ_zeros : forall lo hi f, (forall i, lo <= i < hi -> f i = szero) ->
  sumZ lo hi f = szero.
Proof.
  intros lo hi f H; rewrite (sumZ_ext lo hi f (fun _ => szero)) by assumption.
  apply sumn_zero.
Qed.

(** A sum whose terms are zero outside [l..h] is the sum over [l..h] within range. *)
Lemma sumZ_window : forall lo hi l h f g,
  (forall i, lo <= i < hi -> l <= i < h -> f i = g i) ->
  (forall i, lo <= i < hi -> ~ (l <= i < h) -> f i = szero) ->
  sumZ lo hi f = sumZ (Z.max lo l) (Z.min hi h) g.
Proof.
  intros lo hi l h f g Hin Hout.
  destruct (Z_lt_le_dec (Z.max lo l) (Z.min hi h)) as [Hlt | Hge].
  - rewrite (sumZ_split lo (Z.max lo l) hi) by lia.
    rewrite (sumZ_split (Z.max lo l) (Z.min hi h) hi) by lia.
    rewrite (sumZ_zeros lo (Z.max lo l)) by (intros; apply Hout; lia).
    rewrite (sumZ_zeros (Z.min hi h) hi) by (intros; apply Hout; lia).
    rewrite (sumZ_ext (Z.max lo l) (Z.min hi h) f g) by (intros; apply Hin; lia).
    ring.
  - rewrite (sumZ_empty (Z.max lo l) (Z.min hi h) g) by lia.
    apply sumZ_zeros; intros; apply Hout; lia.
Qed.

End Lemmas.

(** Unfold the constructs to their pointwise meaning. *)
Ltac tunfold :=
  unfold teq, Lit, Add, Sub, Mul, Neg, Gen, Sum, Guard, Acc, Transpose, Flatten,
    Concat, Split, PadR, PadL, TruncR, TruncL, dim0, dim1, sh_swap, sh_flat, sh_split,
    sh_pad, sh_trunc, sh_concat, ext, scons, stl, shd in *.

Ltac to_sumZ := fold sumZ in *.

(** Boolean facts to arithmetic facts. *)
Ltac b2p :=
  repeat match goal with
  | H : in_range _ _ = true |- _ => apply in_range_true in H
  | H : in_range _ _ = false |- _ => apply in_range_false in H
  | H : (_ && _)%bool = true |- _ => apply andb_true_iff in H; destruct H
  | H : (_ && _)%bool = false |- _ => apply andb_false_iff in H; destruct H
  | H : (_ || _)%bool = true |- _ => apply orb_true_iff in H; destruct H
  | H : (_ || _)%bool = false |- _ => apply orb_false_iff in H; destruct H
  | H : negb _ = true |- _ => apply negb_true_iff in H
  | H : negb _ = false |- _ => apply negb_false_iff in H
  | H : (_ <? _) = true |- _ => apply Z.ltb_lt in H
  | H : (_ <? _) = false |- _ => apply Z.ltb_ge in H
  | H : (_ <=? _) = true |- _ => apply Z.leb_le in H
  | H : (_ <=? _) = false |- _ => apply Z.leb_gt in H
  | H : (_ =? _) = true |- _ => apply Z.eqb_eq in H
  | H : (_ =? _) = false |- _ => apply Z.eqb_neq in H
  | H : (_ >? _) = _ |- _ => rewrite Z.gtb_ltb in H
  | H : (_ >=? _) = _ |- _ => rewrite Z.geb_leb in H
  end.

(** Case analysis on every boolean test in the goal, turned into arithmetic. *)
Ltac bcases :=
  repeat match goal with
  | |- context [if ?b then _ else _] => destruct b eqn:?
  end; b2p.

(** Close [e s = e s'] where [s] and [s'] agree everywhere (up to arithmetic), for a
    well-shaped [e]. *)
Ltac same_point :=
  match goal with
  | H : WS _ ?e |- ?e _ = ?e _ =>
      apply (WS_ext _ _ _ _ H); let j := fresh "j" in
      intros [|[|[|j]]]; simpl; try reflexivity; try lia
  | H : forall i, WS _ (?e i) |- ?e _ _ = ?e _ _ =>
      let Hi := fresh in
      match goal with |- ?e ?a _ = ?e ?b _ =>
        replace a with b by lia end;
      apply (WS_ext _ _ _ _ (H _)); let j := fresh "j" in
      intros [|[|[|j]]]; simpl; try reflexivity; try lia
  end.

(** The same for bodies of nested binders. *)
Ltac same_point2 :=
  match goal with
  | H : forall i j, WS _ (?e i j) |- ?e ?a ?b _ = ?e ?c ?d _ =>
      replace c with a by lia; replace d with b by lia;
      apply (WS_ext _ _ _ _ (H _ _)); let j := fresh "j" in
      intros [|[|[|j]]]; simpl; try reflexivity; try lia
  end.

(** Zero reads of a well-shaped tensor outside its first or second extent, the
    arithmetic side proved by [tac]. *)
Ltac zero_read_by tac :=
  match goal with
  | H : WS (?d :: _) ?e |- ?e _ = szero => apply (WS_out0 _ _ _ _ H); simpl; tac
  | H : WS (_ :: ?d :: _) ?e |- ?e _ = szero => apply (WS_out1 _ _ _ _ _ H); simpl; tac
  | H : WS (?d :: _) ?e |- szero = ?e _ => symmetry; apply (WS_out0 _ _ _ _ H); simpl; tac
  | H : WS (_ :: ?d :: _) ?e |- szero = ?e _ =>
      symmetry; apply (WS_out1 _ _ _ _ _ H); simpl; tac
  end.
Ltac zero_read := zero_read_by lia.

(** Give a shape list of known minimal length its first dimensions. *)
Ltac open_shape sh :=
  let d0 := fresh "d" in let d1 := fresh "d" in let t := fresh "t" in
  destruct sh as [|d0 [|d1 t]]; simpl in *; try lia.

(** The extents of well-shaped tensors in the context are naturals. *)
Ltac ws_facts :=
  repeat match goal with
  | H : WS (?d :: _) _ |- _ =>
      lazymatch goal with
      | _ : 0 <= d |- _ => fail
      | _ => pose proof (WS_dim0 _ _ _ H)
      end
  | H : WS (_ :: ?d :: _) _ |- _ =>
      lazymatch goal with
      | _ : 0 <= d |- _ => fail
      | _ => pose proof (WS_dim1 _ _ _ _ H)
      end
  end.

(** The usual end of a pointwise proof. *)
Ltac finish := ws_facts; rewrite ?sadd_0_r, ?sadd_0_l; try lia; try reflexivity;
  try zero_read; try same_point; try same_point2.

Lemma cdiv_gt : forall r c i j, 1 <= c -> 0 <= j -> i * c + j < r -> i < cdiv r c.
Proof.
  intros r c i j Hc Hj H; unfold cdiv.
  pose proof (Z.mul_div_le (- r) c ltac:(lia)). nia.
Qed.

(** Division and modulo facts for every [x / d] and [x mod d] in the goal and
    context, with [d] positive by some hypothesis, for [nia]. *)
Ltac divmod_facts :=
  repeat match goal with
  | |- context [?x mod ?d] =>
      lazymatch goal with
      | _ : x = d * (x / d) + x mod d |- _ => fail
      | _ => assert (0 < d) by lia; pose proof (Z.div_mod x d ltac:(lia));
             pose proof (Z.mod_pos_bound x d ltac:(lia))
      end
  | _ : context [?x mod ?d] |- _ =>
      lazymatch goal with
      | _ : x = d * (x / d) + x mod d |- _ => fail
      | _ => assert (0 < d) by lia; pose proof (Z.div_mod x d ltac:(lia));
             pose proof (Z.mod_pos_bound x d ltac:(lia))
      end
  | |- context [?x / ?d] =>
      lazymatch goal with
      | _ : x = d * (x / d) + x mod d |- _ => fail
      | _ => assert (0 < d) by lia; pose proof (Z.div_mod x d ltac:(lia));
             pose proof (Z.mod_pos_bound x d ltac:(lia))
      end
  | _ : context [?x / ?d] |- _ =>
      lazymatch goal with
      | _ : x = d * (x / d) + x mod d |- _ => fail
      | _ => assert (0 < d) by lia; pose proof (Z.div_mod x d ltac:(lia));
             pose proof (Z.mod_pos_bound x d ltac:(lia))
      end
  end.

(** [finish] for goals with division and modulo by a positive variable. *)
Ltac finish_dm :=
  ws_facts; unfold cdiv in *; divmod_facts; try nia; finish; try nia;
  try zero_read_by nia.
