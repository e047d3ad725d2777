"""Translations of the first twelve sentences of ``examples/demo_corpus.txt``, written by hand.

A model that answers in another language than the anchor returns sentences like these: the
language check (:mod:`cseaug.quality.language`) must reject them and keep the English
originals. Used by the unit tests, the misbehaving-server build and
``benchmarks/bench_language_check.py``.
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
