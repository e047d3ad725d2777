"""Hand-written views of the first twelve sentences of ``examples/demo_corpus.txt``: their
German, French and Spanish translations and one English paraphrase of each.

What a misbehaving model returns: a translation (the language check of
:mod:`cseaug.quality.checks` must reject it and keep the English original), or one
paraphrase for every level (``identical_views``). Used by the unit tests, the
misbehaving-server builds (``tests/reliability/test_misbehaving_llm_rows.py``) and
``benchmarks/measure_row_checks.py``.
"""

from __future__ import annotations

GERMAN: tuple[str, ...] = (
    "Der alte Leuchtturm auf der nördlichen Klippe wurde 2019 von Freiwilligen restauriert.",
    "Eine kleine Bäckerei in der Nähe des Bahnhofs verkauft Brot aus Mehl von örtlichen Mühlen.",
    "Der Fluss überschwemmt fast jeden Frühling die unteren Felder.",
    "Forscher haben gemessen, wie schnell sich der Gletscher im letzten Jahrzehnt zurückgezogen hat.",
    "Der Stadtrat hat einen neuen Radweg entlang des Hafens genehmigt.",
    "Die meisten Kinder des Dorfes gehen über die Holzbrücke zur Schule.",
    "Das Museum wurde nach einer zweijährigen Renovierung seiner Haupthalle wiedereröffnet.",
    "Ein später Frost hat viele Apfelbäume im Tal beschädigt.",
    "Das Orchester spielte eine selten gehörte Sinfonie eines einheimischen Komponisten.",
    "Die Fischer kehrten früh zurück, weil sich von Westen ein Sturm näherte.",
    "Die Bibliothek verleiht ihren Mitgliedern Werkzeuge ebenso wie Bücher.",
    "Zwei Schüler haben auf dem Dach ihrer Schule eine Wetterstation gebaut.",
)

FRENCH: tuple[str, ...] = (
    "Le vieux phare de la falaise nord a été restauré par des bénévoles en 2019.",
    "Une petite boulangerie près de la gare vend du pain fait avec la farine des moulins locaux.",
    "La rivière inonde les champs du bas presque chaque printemps.",
    "Des chercheurs ont mesuré la vitesse à laquelle le glacier a reculé au cours de la dernière décennie.",
    "Le conseil municipal a approuvé une nouvelle piste cyclable le long du port.",
    "La plupart des enfants du village vont à l'école à pied en traversant le pont en bois.",
    "Le musée a rouvert après deux ans de rénovation de sa grande salle.",
    "Une gelée tardive a endommagé de nombreux pommiers de la vallée.",
    "L'orchestre a joué une symphonie rarement entendue d'un compositeur de la région.",
    "Les pêcheurs sont rentrés tôt parce qu'une tempête approchait par l'ouest.",
    "La bibliothèque prête des outils aussi bien que des livres à ses membres.",
    "Deux élèves ont construit une station météo sur le toit de leur école.",
)

SPANISH: tuple[str, ...] = (
    "El viejo faro del acantilado norte fue restaurado por voluntarios en 2019.",
    "Una pequeña panadería cerca de la estación vende pan hecho con harina de molinos locales.",
    "El río inunda los campos bajos casi todas las primaveras.",
    "Los investigadores midieron la rapidez con la que el glaciar retrocedió en la última década.",
    "El ayuntamiento aprobó un nuevo carril bici a lo largo del puerto.",
    "La mayoría de los niños del pueblo van andando a la escuela por el puente de madera.",
    "El museo reabrió tras una renovación de dos años de su sala principal.",
    "Una helada tardía dañó muchos de los manzanos del valle.",
    "La orquesta interpretó una sinfonía poco escuchada de un compositor local.",
    "Los pescadores volvieron temprano porque se acercaba una tormenta desde el oeste.",
    "La biblioteca presta herramientas además de libros a sus socios.",
    "Dos estudiantes construyeron una estación meteorológica en el tejado de su escuela.",
)

PARAPHRASES: tuple[str, ...] = (
    "Volunteers repaired the aging lighthouse that stands on the north cliff in 2019.",
    "Bread baked from locally milled flour is sold at a little bakery by the station.",
    "Nearly every spring, the low-lying fields are flooded by the river.",
    "Scientists tracked the speed at which the glacier shrank during the past ten years.",
    "A new bike lane beside the harbour was given the go-ahead by the city council.",
    "To get to school, most village children cross the wooden bridge on foot.",
    "After its main hall had been renovated for two years, the museum opened again.",
    "Many apple trees in the valley were harmed by a late frost.",
    "A symphony by a local composer that is seldom heard was played by the orchestra.",
    "With a storm coming in from the west, the fishermen came back early.",
    "Members can borrow tools from the library, not just books.",
    "A weather station was put together by two students on their school's roof.",
)
"""English paraphrases of the same twelve sentences: what a model that answers every level
with one paraphrase returns."""
