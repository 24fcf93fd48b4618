(** Well-shapedness is compositional: [WS] of every construct's denotation follows from
    [WS] of its parts plus exactly the facts the shape discipline proves at that node
    (lang/src/shapes.rs, [infer_with_obligations] and [input_obligations]; proved by
    rewrites/src/well_shaped.rs and by the certificate checker under the declarations
    alone), with the shape shape inference computes for it.

    One lemma per construct of [Semantics.v]. Composed along the syntax of a program the
    shape checker accepts, they give [WS] of every subterm's denotation, for every value
    of the binders in scope (the obligations mention sizes only): that is what the
    generated rule statements assume of their metavariables ([WS sh e], or
    [forall i, WS sh (e i)] under binders, or [forall x, WS sv x -> WS sb (b x)] under a
    [let]). [Deep] at the end does that composition once, as a theorem, over a deep
    embedding of the constructs. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics.
Import ListNotations.
Open Scope Z_scope.

Section WellShaped.
Context {K : Scalar}.
Add Ring Kring_ws : sring.

(** * Streams: what [inb] and [agree] see of [scons] and [stl]. *)

Lemma agree_scons : forall n k s s',
  agree n s s' -> agree (S n) (scons k s) (scons k s').
Proof.
  intros n k s s' H [|j] Hj; simpl; [reflexivity |]. apply H; lia.
Qed.

Lemma agree_stl : forall n s s', agree (S n) s s' -> agree n (stl s) (stl s').
Proof. intros n s s' H j Hj; unfold stl; apply H; lia. Qed.

Lemma agree_head : forall n s s', agree (S n) s s' -> s O = s' O.
Proof. intros n s s' H; apply H; lia. Qed.

Lemma agree_refl : forall n s, agree n s s.
Proof. intros n s j _; reflexivity. Qed.

Lemma agree_nil : forall s s', agree (length (@nil Z)) s s'.
Proof. intros s s' j Hj; simpl in Hj; lia. Qed.

(** [inb] depends only on the positions it checks. *)
Lemma inb_agree : forall sh s s', agree (length sh) s s' -> inb sh s -> inb sh s'.
Proof.
  induction sh as [|d sh IH]; intros s s' H Hin; simpl in *; [exact I |].
  destruct Hin as [H0 Ht]. rewrite <- (agree_head _ _ _ H). split; [exact H0 |].
  apply (IH (stl s)); [apply agree_stl; exact H | exact Ht].
Qed.

(** The tail of [scons k s] is [s] (they agree everywhere). *)
Lemma inb_scons : forall d sh k s, inb (d :: sh) (scons k s) <-> 0 <= k < d /\ inb sh s.
Proof. intros; simpl; unfold stl; tauto. Qed.

(** Reading a well-shaped tensor at a stream whose tail (past the first extent) is
    outside the rest of the shape gives zero. *)
Lemma WS_tail_out : forall d sh e k s,
  WS (d :: sh) e -> ~ inb sh s -> e (scons k s) = szero.
Proof.
  intros d sh e k s [_ [Hz _]] Hn; apply Hz; rewrite inb_scons; tauto.
Qed.

Lemma WS_tail_out2 : forall d0 d1 sh e k0 k1 s,
  WS (d0 :: d1 :: sh) e -> ~ inb sh s -> e (scons k0 (scons k1 s)) = szero.
Proof.
  intros d0 d1 sh e k0 k1 s [_ [Hz _]] Hn; apply Hz; rewrite inb_scons, inb_scons; tauto.
Qed.

Lemma WS_agree : forall sh e s s', WS sh e -> agree (length sh) s s' -> e s = e s'.
Proof. intros sh e s s' [_ [_ He]] H; apply He, H. Qed.

Lemma WS_Forall : forall sh e, WS sh e -> Forall (fun d => 0 <= d) sh.
Proof. intros sh e [H _]; exact H. Qed.

Lemma WS_Forall_tail : forall d sh e, WS (d :: sh) e -> Forall (fun d => 0 <= d) sh.
Proof. intros d sh e [H _]; inversion H; assumption. Qed.

(** [~ inb (d :: sh) s] with the head in range leaves the tail out of range. *)
Lemma not_inb_tail : forall d sh s, ~ inb (d :: sh) s -> 0 <= s O < d -> ~ inb sh (stl s).
Proof. intros d sh s Hn H0 Ht; apply Hn; simpl; tauto. Qed.

Lemma not_inb_tail2 : forall d0 d1 sh s, ~ inb (d0 :: d1 :: sh) s ->
  0 <= s O < d0 -> 0 <= s 1%nat < d1 -> ~ inb sh (stl (stl s)).
Proof. intros d0 d1 sh s Hn H0 H1 Ht; apply Hn; simpl; unfold stl at 2; tauto. Qed.

(** * Scalars and pointwise operations. *)

(** A literal has shape [[]] (no obligation). *)
Lemma WS_Lit : forall c, WS [] (Lit c).
Proof.
  intros c; split; [constructor | split].
  - intros s Hn; exfalso; apply Hn; exact I.
  - intros s s' _; reflexivity.
Qed.

(** A pointwise operator that maps zero to zero preserves every shape. *)
Lemma WS_pointwise1 : forall (f : scalar -> scalar) sh a,
  f szero = szero -> WS sh a -> WS sh (fun s => f (a s)).
Proof.
  intros f sh a Hf [Hd [Hz He]]; split; [exact Hd | split].
  - intros s Hn; rewrite (Hz s Hn); exact Hf.
  - intros s s' H; rewrite (He s s' H); reflexivity.
Qed.

Lemma WS_pointwise2 : forall (f : scalar -> scalar -> scalar) sh a b,
  f szero szero = szero -> WS sh a -> WS sh b -> WS sh (fun s => f (a s) (b s)).
Proof.
  intros f sh a b Hf [Hd [Hza Hea]] [_ [Hzb Heb]]; split; [exact Hd | split].
  - intros s Hn; rewrite (Hza s Hn), (Hzb s Hn); exact Hf.
  - intros s s' H; rewrite (Hea s s' H), (Heb s s' H); reflexivity.
Qed.

(** [a + b] and [a - b]: the shape checker requires equal shapes (E0404); no
    obligation. *)
Lemma WS_Add : forall sh a b, WS sh a -> WS sh b -> WS sh (Add a b).
Proof. intros; apply WS_pointwise2; [ring | assumption | assumption]. Qed.

Lemma WS_Sub : forall sh a b, WS sh a -> WS sh b -> WS sh (Sub a b).
Proof. intros; apply WS_pointwise2; [ring | assumption | assumption]. Qed.

(** [a * b]: both operands scalars (E0405); the result is a scalar. *)
Lemma WS_Mul : forall a b, WS [] a -> WS [] b -> WS [] (Mul a b).
Proof. intros; apply WS_pointwise2; [ring | assumption | assumption]. Qed.

(** [-a]: the operand's shape. *)
Lemma WS_Neg : forall sh a, WS sh a -> WS sh (Neg a).
Proof. intros; apply WS_pointwise1; [ring | assumption]. Qed.

(** * Binders. *)

(** [gen i in lo..hi: e]: obligation [hi - lo >= 0] (E0402 when constant, else proved
    under the declarations); shape [(hi - lo) :: sh]. The body is well shaped for every
    value of [i], because its obligations mention sizes only. *)
Lemma WS_Gen : forall lo hi sh e,
  0 <= hi - lo -> (forall i, WS sh (e i)) -> WS (hi - lo :: sh) (Gen lo hi e).
Proof.
  intros lo hi sh e Hlen He; unfold Gen; split; [| split].
  - constructor; [exact Hlen | exact (WS_Forall _ _ (He lo))].
  - intros s Hn. destruct (in_range (s O) (hi - lo)) eqn:R; [| reflexivity].
    apply in_range_true in R. destruct (He (lo + s O)) as [_ [Hz _]].
    apply Hz, (not_inb_tail (hi - lo)); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (hi - lo)); [| reflexivity].
    apply (WS_agree sh); [apply He | apply agree_stl; exact H].
Qed.

(** [sum i in lo..hi: e]: the body's shape, for every range (also empty or backwards:
    then the sum is the zero of every shape); no obligation. *)
Lemma WS_Sum : forall lo hi sh e, (forall i, WS sh (e i)) -> WS sh (Sum lo hi e).
Proof.
  intros lo hi sh e He; unfold Sum; split; [| split].
  - exact (WS_Forall _ _ (He lo)).
  - intros s Hn. rewrite <- (sumn_zero (Z.to_nat (hi - lo)) lo). apply sumn_ext.
    intros i _. destruct (He i) as [_ [Hz _]]; apply Hz, Hn.
  - intros s s' H. apply sumn_ext. intros i _. apply (WS_agree sh); [apply He | exact H].
Qed.

(** [max i in lo..hi: e] of a scalar body (E0416): a scalar, for every range (an
    empty one gives [bot]); no obligation. *)
Lemma maxn_ext : forall f n lo acc g h, (forall i, g i = h i) ->
  maxn f n lo acc g = maxn f n lo acc h.
Proof.
  intros f n; induction n as [|n IH]; intros lo acc g h H; simpl; [reflexivity |].
  rewrite (H lo); apply IH, H.
Qed.

Lemma WS_MaxRed : forall f bot lo hi e, (forall i, WS [] (e i)) -> WS [] (MaxRed f bot lo hi e).
Proof.
  intros f bot lo hi e He; unfold MaxRed; split; [constructor | split].
  - intros s Hn; exfalso; apply Hn; exact I.
  - intros s s' H. apply maxn_ext. intro i. apply (WS_agree []); [apply He | exact H].
Qed.

(** [[p] * e]: the body's shape whatever [p] is (obligations are never proved under a
    guard's facts). *)
Lemma WS_Guard : forall p sh e, WS sh e -> WS sh (Guard p e).
Proof.
  intros p sh e [Hd [Hz He]]; unfold Guard; split; [exact Hd | split].
  - intros s Hn; destruct p; [apply Hz, Hn | reflexivity].
  - intros s s' H; destruct p; [apply He, H | reflexivity].
Qed.

(** [let x = v in b]: the shape of [b] with [x] at the shape inferred for [v]. In the
    embedding [let] is Rocq's own; [b] is well shaped for every well-shaped [x]. *)
Lemma WS_Let : forall sv sb v (b : T -> T),
  WS sv v -> (forall x, WS sv x -> WS sb (b x)) -> WS sb (let x := v in b x).
Proof. intros sv sb v b Hv Hb; exact (Hb v Hv). Qed.

(** [e[k]]: the tail of [e]'s shape (E0403 if [e] is a scalar), for every index [k]
    (out of range reads are zero); no obligation. *)
Lemma WS_Acc : forall d sh e k, WS (d :: sh) e -> WS sh (Acc e k).
Proof.
  intros d sh e k [Hd [Hz He]]; unfold Acc; split; [| split].
  - inversion Hd; assumption.
  - intros s Hn; apply Hz; rewrite inb_scons; tauto.
  - intros s s' H; apply He; simpl; apply agree_scons, H.
Qed.

(** * Reshape operators: the argument's shape is given explicitly, as in [Semantics.v]. *)

(** [transpose(e)]: rank at least 2 (E0407); the first two extents swapped. *)
Lemma WS_Transpose : forall d0 d1 sh e,
  WS (d0 :: d1 :: sh) e -> WS (d1 :: d0 :: sh) (Transpose (d0 :: d1 :: sh) e).
Proof.
  intros d0 d1 sh e He; pose proof (WS_Forall _ _ He) as Hd; inversion Hd as [|? ? Hx0 Hd'];
    inversion Hd' as [|? ? Hx1 Hd'']; subst.
  unfold Transpose, dim0, dim1; simpl nth; split; [| split].
  - repeat constructor; assumption.
  - intros s Hn. destruct (in_range (s O) d1) eqn:R0; [| reflexivity].
    destruct (in_range (s 1%nat) d0) eqn:R1; [| reflexivity]. simpl andb.
    apply in_range_true in R0; apply in_range_true in R1.
    apply (WS_tail_out2 d0 d1 sh); [exact He |].
    apply (not_inb_tail2 d1 d0); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    assert (E1 : s 1%nat = s' 1%nat) by (apply H; simpl; lia). rewrite E1.
    destruct (in_range (s' O) d1 && in_range (s' 1%nat) d0); [| reflexivity].
    apply (WS_agree _ _ _ _ He); simpl.
    apply agree_scons, agree_scons, agree_stl, agree_stl, H.
Qed.

(** [flatten(e)]: rank at least 2 (E0407); the first two extents multiplied. *)
Lemma WS_Flatten : forall d0 d1 sh e,
  WS (d0 :: d1 :: sh) e -> WS (d0 * d1 :: sh) (Flatten (d0 :: d1 :: sh) e).
Proof.
  intros d0 d1 sh e He; pose proof (WS_Forall _ _ He) as Hd; inversion Hd as [|? ? Hx0 Hd'];
    inversion Hd' as [|? ? Hx1 Hd'']; subst.
  unfold Flatten, dim0, dim1; simpl nth; split; [| split].
  - constructor; [nia | assumption].
  - intros s Hn. destruct (in_range (s O) (d0 * d1)) eqn:R; [| reflexivity].
    apply in_range_true in R.
    apply (WS_tail_out2 d0 d1 sh); [exact He |].
    apply (not_inb_tail (d0 * d1)); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (d0 * d1)); [| reflexivity].
    apply (WS_agree _ _ _ _ He); simpl.
    apply agree_scons, agree_scons, agree_stl, H.
Qed.

(** [concat(a, b)]: both tensors (E0406) with equal element shapes (E0406); the
    leading extents added; no obligation. *)
Lemma WS_Concat : forall da db sh a b,
  WS (da :: sh) a -> WS (db :: sh) b ->
  WS (da + db :: sh) (Concat (da :: sh) (db :: sh) a b).
Proof.
  intros da db sh a b Ha Hb.
  pose proof (WS_dim0 _ _ _ Ha) as Hda; pose proof (WS_dim0 _ _ _ Hb) as Hdb.
  unfold Concat, dim0; simpl nth; split; [| split].
  - constructor; [lia | exact (WS_Forall_tail _ _ _ Hb)].
  - intros s Hn. destruct (in_range (s O) (da + db)) eqn:R; [| reflexivity].
    apply in_range_true in R. pose proof (not_inb_tail _ _ _ Hn R) as Ht.
    destruct (s O <? da).
    + destruct Ha as [_ [Hz _]]; apply Hz; intro Hin; apply Ht; simpl in Hin; tauto.
    + apply (WS_tail_out db sh); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (da + db)); [| reflexivity].
    destruct (s' O <? da).
    + apply (WS_agree _ _ _ _ Ha), H.
    + apply (WS_agree _ _ _ _ Hb); simpl; apply agree_scons, agree_stl, H.
Qed.

(** [split(k, e)]: obligation [k >= 1] (E0409 when constant); shape
    [cdiv n k :: k :: sh]. *)
Lemma WS_Split : forall n sh k e,
  1 <= k -> WS (n :: sh) e -> WS (cdiv n k :: k :: sh) (Split (n :: sh) k e).
Proof.
  intros n sh k e Hk He. pose proof (WS_dim0 _ _ _ He) as Hn0.
  unfold Split, dim0; simpl nth; split; [| split].
  - assert ((- n) / k <= 0) by (apply Z.div_le_upper_bound; lia).
    unfold cdiv; repeat constructor; [lia | lia | exact (WS_Forall_tail _ _ _ He)].
  - intros s Hn. destruct (in_range (s O) (cdiv n k)) eqn:R0; [| reflexivity].
    destruct (in_range (s 1%nat) k) eqn:R1; [| reflexivity]. simpl andb.
    apply in_range_true in R0; apply in_range_true in R1.
    destruct (s O * k + s 1%nat <? n); [| reflexivity].
    apply (WS_tail_out n sh); [exact He |].
    apply (not_inb_tail2 (cdiv n k) k); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    assert (E1 : s 1%nat = s' 1%nat) by (apply H; simpl; lia). rewrite E1.
    destruct (in_range (s' O) (cdiv n k) && in_range (s' 1%nat) k); [| reflexivity].
    destruct (s' O * k + s' 1%nat <? n); [| reflexivity].
    apply (WS_agree _ _ _ _ He); simpl.
    apply agree_scons, agree_stl, agree_stl, H.
Qed.

(** [pad_r(k, e)]: obligation [k >= 0] (E0409 when constant); shape [n + k :: sh]. *)
Lemma WS_PadR : forall n sh k e,
  0 <= k -> WS (n :: sh) e -> WS (n + k :: sh) (PadR (n :: sh) k e).
Proof.
  intros n sh k e Hk He. pose proof (WS_dim0 _ _ _ He) as Hn0.
  unfold PadR, dim0; simpl nth; split; [| split].
  - constructor; [lia | exact (WS_Forall_tail _ _ _ He)].
  - intros s Hn. destruct (in_range (s O) (n + k)) eqn:R; [| reflexivity].
    apply in_range_true in R. pose proof (not_inb_tail _ _ _ Hn R) as Ht.
    destruct (s O <? n); [| reflexivity].
    destruct He as [_ [Hz _]]; apply Hz; intro Hin; apply Ht; simpl in Hin; tauto.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (n + k)); [| reflexivity].
    destruct (s' O <? n); [apply (WS_agree _ _ _ _ He), H | reflexivity].
Qed.

(** [pad_l(k, e)]: obligation [k >= 0]; shape [n + k :: sh]. *)
Lemma WS_PadL : forall n sh k e,
  0 <= k -> WS (n :: sh) e -> WS (n + k :: sh) (PadL (n :: sh) k e).
Proof.
  intros n sh k e Hk He. pose proof (WS_dim0 _ _ _ He) as Hn0.
  unfold PadL, dim0; simpl nth; split; [| split].
  - constructor; [lia | exact (WS_Forall_tail _ _ _ He)].
  - intros s Hn. destruct (in_range (s O) (n + k)) eqn:R; [| reflexivity].
    apply in_range_true in R. pose proof (not_inb_tail _ _ _ Hn R) as Ht.
    destruct (k <=? s O); [| reflexivity].
    apply (WS_tail_out n sh); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (n + k)); [| reflexivity].
    destruct (k <=? s' O); [| reflexivity].
    apply (WS_agree _ _ _ _ He); simpl; apply agree_scons, agree_stl, H.
Qed.

(** [trunc_r(k, e)]: obligations [k >= 0] and [k <= n] (E0409/E0410 when decided by the
    normal form); shape [n - k :: sh]. *)
Lemma WS_TruncR : forall n sh k e,
  0 <= k <= n -> WS (n :: sh) e -> WS (n - k :: sh) (TruncR (n :: sh) k e).
Proof.
  intros n sh k e Hk He.
  unfold TruncR, dim0; simpl nth; split; [| split].
  - constructor; [lia | exact (WS_Forall_tail _ _ _ He)].
  - intros s Hn. destruct (in_range (s O) (n - k)) eqn:R; [| reflexivity].
    apply in_range_true in R. pose proof (not_inb_tail _ _ _ Hn R) as Ht.
    destruct He as [_ [Hz _]]; apply Hz; intro Hin; apply Ht; simpl in Hin; tauto.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (n - k)); [apply (WS_agree _ _ _ _ He), H | reflexivity].
Qed.

(** [trunc_l(k, e)]: obligations [k >= 0] and [k <= n]; shape [n - k :: sh]. *)
Lemma WS_TruncL : forall n sh k e,
  0 <= k <= n -> WS (n :: sh) e -> WS (n - k :: sh) (TruncL (n :: sh) k e).
Proof.
  intros n sh k e Hk He.
  unfold TruncL, dim0; simpl nth; split; [| split].
  - constructor; [lia | exact (WS_Forall_tail _ _ _ He)].
  - intros s Hn. destruct (in_range (s O) (n - k)) eqn:R; [| reflexivity].
    apply in_range_true in R. pose proof (not_inb_tail _ _ _ Hn R) as Ht.
    apply (WS_tail_out n sh); assumption.
  - intros s s' H. rewrite (agree_head _ _ _ H).
    destruct (in_range (s' O) (n - k)); [| reflexivity].
    apply (WS_agree _ _ _ _ He); simpl; apply agree_scons, agree_stl, H.
Qed.

(** * Inputs: obligation [d >= 0] for every extent [d] (E0412 when constant). A tensor
    given by its row-major data at such a shape is well shaped, whatever the data. *)

Lemma offset_out : forall sh s, ~ inb sh s -> offset sh s = None.
Proof.
  induction sh as [|d sh IH]; intros s Hn; simpl in *; [exfalso; apply Hn, I |].
  destruct (in_range (s O) d) eqn:R; [| reflexivity].
  apply in_range_true in R. rewrite IH; [reflexivity |]. intro Ht; apply Hn; tauto.
Qed.

Lemma offset_agree : forall sh s s', agree (length sh) s s' -> offset sh s = offset sh s'.
Proof.
  induction sh as [|d sh IH]; intros s s' H; simpl; [reflexivity |].
  rewrite (agree_head _ _ _ H), (IH (stl s) (stl s')); [reflexivity |].
  apply agree_stl, H.
Qed.

Lemma WS_of_list : forall sh data,
  Forall (fun d => 0 <= d) sh -> WS sh (of_list sh data).
Proof.
  intros sh data Hd; unfold of_list; split; [exact Hd | split].
  - intros s Hn; rewrite offset_out by exact Hn; reflexivity.
  - intros s s' H; rewrite (offset_agree _ _ _ H); reflexivity.
Qed.


(** * The composition, once, over a deep embedding.

    [tm] is the syntax of the core IR's tensor constructs (without scalar division,
    which has no ring semantics and no rule statement). Index expressions, predicates
    and ranges stay shallow, as functions of the values of the index binders in scope
    ([list Z], innermost first): their meaning is not at stake here. Sizes are fixed
    (a section of any size assignment satisfying the declarations), so an extent or a
    reshape amount that shape inference builds from sizes is a number; a reshape
    operator carries its argument's shape, as the translator to Rocq writes it. Tensor
    variables (inputs, earlier definitions, [let]s) are de Bruijn indices into a list
    of tensors. *)

Inductive tm : Type :=
  | tVar (n : nat)
  | tLit (c : scalar)
  | tCoord (k : list Z -> Z)                    (* an index's value: [float(i + 1)] *)
  | tAdd (a b : tm) | tSub (a b : tm) | tMul (a b : tm) | tNeg (a : tm)
  | tGen (lo hi : list Z -> Z) (body : tm)      (* binds an index *)
  | tSum (lo hi : list Z -> Z) (body : tm)      (* binds an index *)
  | tMax (f : scalar -> scalar -> scalar) (bot : scalar)
         (lo hi : list Z -> Z) (body : tm)      (* binds an index *)
  | tGuard (p : list Z -> bool) (body : tm)
  | tLet (v body : tm)                          (* binds a tensor *)
  | tAcc (e : tm) (k : list Z -> Z)
  | tTranspose (sh : list Z) (e : tm) | tFlatten (sh : list Z) (e : tm)
  | tConcat (sa sb : list Z) (a b : tm)
  | tSplit (sh : list Z) (k : Z) (e : tm)
  | tPadL (sh : list Z) (k : Z) (e : tm) | tPadR (sh : list Z) (k : Z) (e : tm)
  | tTruncL (sh : list Z) (k : Z) (e : tm) | tTruncR (sh : list Z) (k : Z) (e : tm).

Fixpoint den (rho : list Z) (sigma : list T) (t : tm) : T :=
  match t with
  | tVar n => nth n sigma (fun _ => szero)
  | tLit c => Lit c
  | tCoord k => Lit (sofz (k rho))
  | tAdd a b => Add (den rho sigma a) (den rho sigma b)
  | tSub a b => Sub (den rho sigma a) (den rho sigma b)
  | tMul a b => Mul (den rho sigma a) (den rho sigma b)
  | tNeg a => Neg (den rho sigma a)
  | tGen lo hi b => Gen (lo rho) (hi rho) (fun i => den (i :: rho) sigma b)
  | tSum lo hi b => Sum (lo rho) (hi rho) (fun i => den (i :: rho) sigma b)
  | tMax f bot lo hi b => MaxRed f bot (lo rho) (hi rho) (fun i => den (i :: rho) sigma b)
  | tGuard p b => Guard (p rho) (den rho sigma b)
  | tLet v b => let x := den rho sigma v in den rho (x :: sigma) b
  | tAcc e k => Acc (den rho sigma e) (k rho)
  | tTranspose sh e => Transpose sh (den rho sigma e)
  | tFlatten sh e => Flatten sh (den rho sigma e)
  | tConcat sa sb a b => Concat sa sb (den rho sigma a) (den rho sigma b)
  | tSplit sh k e => Split sh k (den rho sigma e)
  | tPadL sh k e => PadL sh k (den rho sigma e)
  | tPadR sh k e => PadR sh k (den rho sigma e)
  | tTruncL sh k e => TruncL sh k (den rho sigma e)
  | tTruncR sh k e => TruncR sh k (den rho sigma e)
  end.

(** What the shape checker accepts, with the shape it infers: the rules of
    [infer_obl] in lang/src/shapes.rs, each side condition being either a shape
    equality the checker enforces (by equal normal forms) or an obligation proved under
    the declarations. A [gen]'s extent must not depend on the index binders (E0401). *)
Inductive wt (G : list (list Z)) : tm -> list Z -> Prop :=
  | wt_var : forall n sh, nth_error G n = Some sh -> wt G (tVar n) sh
  | wt_lit : forall c, wt G (tLit c) []
  | wt_coord : forall k, wt G (tCoord k) []
  | wt_add : forall sh a b, wt G a sh -> wt G b sh -> wt G (tAdd a b) sh
  | wt_sub : forall sh a b, wt G a sh -> wt G b sh -> wt G (tSub a b) sh
  | wt_mul : forall a b, wt G a [] -> wt G b [] -> wt G (tMul a b) []
  | wt_neg : forall sh a, wt G a sh -> wt G (tNeg a) sh
  | wt_gen : forall lo hi d sh b,
      (forall rho, hi rho - lo rho = d) -> 0 <= d -> wt G b sh ->
      wt G (tGen lo hi b) (d :: sh)
  | wt_sum : forall lo hi sh b, wt G b sh -> wt G (tSum lo hi b) sh
  | wt_max : forall f bot lo hi b, wt G b [] -> wt G (tMax f bot lo hi b) []
  | wt_guard : forall p sh b, wt G b sh -> wt G (tGuard p b) sh
  | wt_let : forall sv sb v b, wt G v sv -> wt (sv :: G) b sb -> wt G (tLet v b) sb
  | wt_acc : forall d sh e k, wt G e (d :: sh) -> wt G (tAcc e k) sh
  | wt_transpose : forall d0 d1 sh e,
      wt G e (d0 :: d1 :: sh) -> wt G (tTranspose (d0 :: d1 :: sh) e) (d1 :: d0 :: sh)
  | wt_flatten : forall d0 d1 sh e,
      wt G e (d0 :: d1 :: sh) -> wt G (tFlatten (d0 :: d1 :: sh) e) (d0 * d1 :: sh)
  | wt_concat : forall da db sh a b,
      wt G a (da :: sh) -> wt G b (db :: sh) ->
      wt G (tConcat (da :: sh) (db :: sh) a b) (da + db :: sh)
  | wt_split : forall n sh k e,
      1 <= k -> wt G e (n :: sh) -> wt G (tSplit (n :: sh) k e) (cdiv n k :: k :: sh)
  | wt_padl : forall n sh k e,
      0 <= k -> wt G e (n :: sh) -> wt G (tPadL (n :: sh) k e) (n + k :: sh)
  | wt_padr : forall n sh k e,
      0 <= k -> wt G e (n :: sh) -> wt G (tPadR (n :: sh) k e) (n + k :: sh)
  | wt_truncl : forall n sh k e,
      0 <= k <= n -> wt G e (n :: sh) -> wt G (tTruncL (n :: sh) k e) (n - k :: sh)
  | wt_truncr : forall n sh k e,
      0 <= k <= n -> wt G e (n :: sh) -> wt G (tTruncR (n :: sh) k e) (n - k :: sh).

Lemma WS_nth : forall G sigma n sh,
  Forall2 WS G sigma -> nth_error G n = Some sh -> WS sh (nth n sigma (fun _ => szero)).
Proof.
  intros G sigma n sh H; revert n; induction H as [|sh' x G' sigma' Hx H IH];
    intros [|n] Hn; simpl in Hn; try discriminate.
  - injection Hn as <-; exact Hx.
  - apply IH, Hn.
Qed.

(** Every subterm of an accepted program denotes a well-shaped tensor at its inferred
    shape, for every value of the index binders in scope and every well-shaped value of
    the tensor variables in scope (inputs: [WS_of_list]; earlier definitions and [let]s:
    this theorem). *)
Theorem WS_den : forall G t sh, wt G t sh ->
  forall rho sigma, Forall2 WS G sigma -> WS sh (den rho sigma t).
Proof.
  intros G t sh Ht; induction Ht; intros rho sigma Hs; simpl.
  - eapply WS_nth; eassumption.
  - apply WS_Lit.
  - apply WS_Lit.
  - apply WS_Add; auto.
  - apply WS_Sub; auto.
  - apply WS_Mul; auto.
  - apply WS_Neg; auto.
  - rewrite <- (H rho). apply WS_Gen; [rewrite H; exact H0 | intro i; apply IHHt, Hs].
  - apply WS_Sum; intro i; apply IHHt, Hs.
  - apply WS_MaxRed; intro i; apply IHHt, Hs.
  - apply WS_Guard; auto.
  - exact (WS_Let sv sb _ (fun x => den rho (x :: sigma) b) (IHHt1 rho sigma Hs)
             (fun x Hx => IHHt2 rho (x :: sigma) (Forall2_cons _ _ Hx Hs))).
  - eapply WS_Acc; auto.
  - apply WS_Transpose; auto.
  - apply WS_Flatten; auto.
  - apply WS_Concat; auto.
  - apply WS_Split; auto.
  - apply WS_PadL; auto.
  - apply WS_PadR; auto.
  - apply WS_TruncL; auto.
  - apply WS_TruncR; auto.
Qed.

(** The two forms the generated statements assume beyond [WS sh e]: a metavariable
    under an index binder, and the body of a [let]. *)
Corollary WS_den_binder : forall G t sh, wt G t sh ->
  forall rho sigma, Forall2 WS G sigma -> forall i, WS sh (den (i :: rho) sigma t).
Proof. intros; eapply WS_den; eassumption. Qed.

Corollary WS_den_let : forall G sv t sb, wt (sv :: G) t sb ->
  forall rho sigma, Forall2 WS G sigma ->
  forall x, WS sv x -> WS sb (den rho (x :: sigma) t).
Proof. intros; eapply WS_den; [eassumption | constructor; assumption]. Qed.

(** * The obligations are needed: without each, its lemma is false (any scalars). The
    first is issue 17's example, [gen i < n - 5] at [n = 2]. *)

Let v2 : T := of_list [2] [sone; sone].
Let WS_v2 : WS [2] v2.
Proof. apply WS_of_list; repeat constructor; lia. Qed.

Example WS_Gen_needs_length : ~ (forall lo hi sh (e : Z -> T),
  (forall i, WS sh (e i)) -> WS (hi - lo :: sh) (Gen lo hi e)).
Proof.
  intro H; destruct (H 0 (2 - 5) [] (fun _ => Lit sone) (fun _ => WS_Lit sone)) as [Hd _].
  inversion Hd; lia.
Qed.

Example WS_Split_needs_positive : ~ (forall n sh k e,
  WS (n :: sh) e -> WS (cdiv n k :: k :: sh) (Split (n :: sh) k e)).
Proof.
  intro H; destruct (H 2 [] (-1) v2 WS_v2) as [Hd _].
  inversion Hd as [|? ? Hx]; change (cdiv 2 (-1)) with (-2) in Hx; lia.
Qed.

Example WS_PadR_needs_amount : ~ (forall n sh k e,
  WS (n :: sh) e -> WS (n + k :: sh) (PadR (n :: sh) k e)).
Proof.
  intro H; destruct (H 2 [] (-3) v2 WS_v2) as [Hd _].
  inversion Hd; lia.
Qed.

Example WS_TruncL_needs_extent : ~ (forall n sh k e,
  0 <= k -> WS (n :: sh) e -> WS (n - k :: sh) (TruncL (n :: sh) k e)).
Proof.
  intro H; destruct (H 2 [] 3 v2 ltac:(lia) WS_v2) as [Hd _].
  inversion Hd; lia.
Qed.

End WellShaped.

Print Assumptions WS_den.
Print Assumptions WS_of_list.
