"""The common English words the garbage check counts (about 400 of the most frequent, written out
here for Caveat; ordinary prose has roughly half its words among them, random token soup almost none).
The same list feeds the deterministic prompt generator's fillers."""

COMMON = frozenset("""
a about above across after again against all almost along already also although always am among an and
another any anyone anything are around as ask asked at away back be became because become been before
began behind being believe below best better between big both bring brought but by call called came can
cannot care carry case cause certain change child children city clear close come common could country
course cut day days did different do does done door down during each early earth easy end enough even
ever every example eye eyes face fact family far father feel felt few field find first five follow food
for form found four free friend from full gave get give given go going good got great green ground group
grow had half hand hands hard has have he head hear heard help her here high him himself his hold home
hope house how however i idea if important in inside into is it its itself just keep kind knew know
known land large last late later lead learn least leave left less let life light like line little live
long look made make man many may me mean men might mind miss moment more morning most mother move much
must my name near need never new next night no not nothing now number of off often old on once one only
open or order other others our out over own page paper part past people perhaps place plan play point
power present problem put question quite rather read real really reason red rest right river road room
round run said same saw say school sea second see seem seemed seen set several shall she should show
side simple since small so some something sometimes soon sound space speak stand start state still stood
stop story study such sun sure system take taken talk tell than that the their them then there these
they thing things think this those though thought three through time to today together told too took
toward town tree true try turn turned two under understand until up upon us use used usually very voice
walk want was watch water way we well went were what when where whether which while white who whole why
will with within without word words work world would write year years yes yet you young your
able across add air answer area art became bed bird blue body book boy build business center class cold
color company compare cost dark deep describe detail develop draw east energy evening explain feature
figure final fire fish forest garden girl glass gold history horse hour human inform island job language
letter level list market matter measure middle mountain music nature north notice object ocean paint
person picture piece plant price process produce rain region remember report rock science season shape
ship simple slow snow south special spring stone street strong summer surface table teacher test travel
unit valley village wall warm weather west wind winter wood yellow
""".split())
